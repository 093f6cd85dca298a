/* Many host threads on one arena: no two live blocks ever overlap, the counters balance, and a
 * concurrent reclaimer (as cachealloc-top's requests are served) and device synchronizations
 * never corrupt the pools. With expandable segments the reclaimer unmaps pages while the
 * workers map others, and the fake sees any page used unmapped or unmapped under work. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "arena/arena.h"
#include "fake_backend.h"

#define THREADS 4
#define OPS 20000
#define MAX_LIVE 2048

static fake_device dev;
static ca_backend be;
static ca_arena *arena;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t reg_addr[MAX_LIVE];
static size_t reg_size[MAX_LIVE];
static int reg_n;
static int overlaps;
static int stop_reclaimer;

static void reg_add(uintptr_t a, size_t s)
{
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < reg_n; i++)
        if (a < reg_addr[i] + reg_size[i] && reg_addr[i] < a + s)
            overlaps++;
    if (reg_n < MAX_LIVE) {
        reg_addr[reg_n] = a;
        reg_size[reg_n++] = s;
    }
    pthread_mutex_unlock(&reg_lock);
}

static void reg_del(uintptr_t a)
{
    pthread_mutex_lock(&reg_lock);
    for (int i = 0; i < reg_n; i++) {
        if (reg_addr[i] == a) {
            reg_addr[i] = reg_addr[--reg_n];
            reg_size[i] = reg_size[reg_n];
            break;
        }
    }
    pthread_mutex_unlock(&reg_lock);
}

static void *worker(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    uint64_t rng = 0x9E3779B97F4A7C15ull * (id + 1);
    ca_stream_t s = (ca_stream_t)(0x10000 * (id + 1));
    ca_stream_created(arena, 0, s, 1);
    void *mine[64] = {0};
    size_t sizes[64] = {0};
    unsigned api[64] = {0};
    for (int op = 0; op < OPS; op++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        int slot = (int)(rng % 64);
        if (mine[slot]) {
            reg_del((uintptr_t)mine[slot]);
            fake_use(&dev, s, mine[slot], sizes[slot]);
            assert_int_equal(ca_free(arena, mine[slot], s, api[slot], NULL), CA_OK);
            mine[slot] = NULL;
        } else {
            sizes[slot] = 1 + (rng >> 20) % (rng % 8 == 0 ? (4u << 20) : 65536u);
            api[slot] = (rng >> 8) % 2 ? CA_API_ASYNC : CA_API_PLAIN;
            if (ca_malloc(arena, 0, sizes[slot], s, api[slot], &mine[slot]) != CA_OK) {
                mine[slot] = NULL;
                continue;
            }
            reg_add((uintptr_t)mine[slot], sizes[slot]);
        }
        if (op % 997 == 0) {
            uint64_t t = ca_device_sync_begin(arena, 0);
            fake_complete_all(&dev);
            ca_device_synchronized(arena, 0, t);
        } else if (op % 31 == 0) {
            fake_complete(&dev, s);
        }
    }
    for (int i = 0; i < 64; i++) {
        if (mine[i]) {
            reg_del((uintptr_t)mine[i]);
            assert_int_equal(ca_free(arena, mine[i], s, api[i], NULL), CA_OK);
        }
    }
    ca_stream_destroyed(arena, 0, s);
    return NULL;
}

static void *reclaimer(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&stop_reclaimer, __ATOMIC_ACQUIRE)) {
        ca_reclaim(arena, -1);
        ca_dev_stats st;
        if (ca_get_stats(arena, 0, &st))
            assert_true(st.reserved_bytes >= st.allocated_bytes);
    }
    return NULL;
}

static void run_threads(int expandable)
{
    fake_init(&dev, &be, 1ull << 34);
    ca_config cfg = {.pool = CA_POOL_SPLIT, .reuse = CA_REUSE_SAFE,
                     .release_threshold = UINT64_MAX, .max_split = UINT64_MAX,
                     .expandable = expandable, .quiet = 1};
    stop_reclaimer = 0;
    arena = ca_arena_create(&be, &cfg);
    pthread_t t[THREADS], r;
    pthread_create(&r, NULL, reclaimer, NULL);
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    __atomic_store_n(&stop_reclaimer, 1, __ATOMIC_RELEASE);
    pthread_join(r, NULL);
    assert_int_equal(overlaps, 0);
    ca_dev_stats st;
    assert_int_equal(ca_get_stats(arena, 0, &st), 1);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.reserved_bytes, st.cached_bytes + st.pending_bytes);
    assert_int_equal(st.alloc_calls, st.free_calls + st.oom_failures);
    fake_complete_all(&dev);
    ca_reclaim(arena, -1);
    assert_int_equal(ca_get_stats(arena, 0, &st), 1);
    assert_int_equal(st.reserved_bytes, 0);
    ca_arena_destroy(arena);
    assert_int_equal(dev.nlive, 0);
    assert_int_equal(dev.reserves, dev.va_frees);
    assert_int_equal(dev.used, 0);
    if (dev.violations)
        fail_msg("%s", dev.violation);
}

static void test_threads(void **state)
{
    (void)state;
    run_threads(0);
}

static void test_threads_expandable(void **state)
{
    (void)state;
    run_threads(1);
    assert_true(dev.unmaps > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_threads),
                                       cmocka_unit_test(test_threads_expandable)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
