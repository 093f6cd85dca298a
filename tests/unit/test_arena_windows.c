/* What other threads may do while the arena waits with its lock dropped, and the searches that
 * must not miss a fitting block. The fake backend runs a hook right after an event or device
 * synchronization, standing in for another thread acting inside that window. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "arena/arena.h"
#include "fake_backend.h"

#define MiB ((size_t)1 << 20)
#define S1 ((ca_stream_t)0x1000)
#define S2 ((ca_stream_t)0x2000)
#define S3 ((ca_stream_t)0x3000)

static fake_device dev;
static ca_backend be;
static ca_arena *A;

static void start(uint64_t capacity, uint64_t prealloc)
{
    fake_init(&dev, &be, capacity);
    ca_config cfg = {.pool = CA_POOL_SPLIT, .reuse = CA_REUSE_SAFE,
                     .release_threshold = UINT64_MAX, .max_split = UINT64_MAX, .quiet = 1,
                     .prealloc_bytes = prealloc};
    A = ca_arena_create(&be, &cfg);
}

static void *must(size_t n, ca_stream_t s, unsigned api)
{
    void *p = NULL;
    assert_int_equal(ca_malloc(A, 0, n, s, api, &p), CA_OK);
    return p;
}

static void stop(void)
{
    fake_complete_all(&dev);
    ca_arena_destroy(A);
}

/* A stream destroyed while the arena synchronized the device for another reason: its last
 * work was queued after the sync began, so the sync does not cover it. */
static void *X;
static uint64_t s2_work;

static void destroy_s2_with_work(void)
{
    dev.record_fails_for = -1;
    fake_work(&dev, S2); /* a kernel on S2 reads X */
    s2_work = fake_enqueued(&dev, S2);
    assert_int_equal(ca_free(A, X, NULL, CA_API_PLAIN, NULL), CA_OK);
    ca_stream_destroyed(A, 0, S2);
}

static void test_sync_does_not_cover_later_destroyed_stream(void **state)
{
    (void)state;
    start(2 * MiB, 0);
    ca_stream_created(A, 0, S1, 1);
    ca_stream_created(A, 0, S2, 1);
    ca_stream_created(A, 0, S3, 1);
    X = must(MiB, NULL, CA_API_PLAIN);
    void *y = must(MiB, NULL, CA_API_PLAIN);
    /* S3's last event cannot be recorded: the arena waits for the whole device instead. */
    dev.record_fails_for = fake_stream(&dev, S3);
    dev.on_device_sync = destroy_s2_with_work;
    ca_stream_destroyed(A, 0, S3);
    void *z = NULL;
    ca_status rc = ca_malloc(A, 0, MiB, NULL, CA_API_PLAIN, &z);
    if (rc == CA_OK && z == X)
        assert_true(fake_done(&dev, S2, s2_work)); /* only once S2's kernel is over */
    ca_free(A, y, NULL, CA_API_PLAIN, NULL);
    if (z)
        ca_free(A, z, NULL, CA_API_PLAIN, NULL);
    stop();
}

/* A fitting block that is the 17th of its size class, behind 16 smaller ones. */
static void test_fitting_block_behind_the_scan_limit(void **state)
{
    (void)state;
    start(6 * 2 * MiB, 0);
    ca_stream_created(A, 0, S1, 1); /* plain frees go through fences: no exact-size lists */
    size_t s = 1025 * 512, f = 1100 * 512;
    void *small[16];
    int k = 0;
    void *fit = must(f, NULL, CA_API_PLAIN);
    must(512, NULL, CA_API_PLAIN);
    for (int i = 0; i < 2; i++) {
        small[k++] = must(s, NULL, CA_API_PLAIN);
        must(512, NULL, CA_API_PLAIN);
    }
    must(2 * MiB - (f + 512) - 2 * (s + 512), NULL, CA_API_PLAIN);
    for (int g = 0; g < 4; g++) {
        for (int i = 0; i < 3; i++) {
            small[k++] = must(s, NULL, CA_API_PLAIN);
            must(512, NULL, CA_API_PLAIN);
        }
        must(2 * MiB - 3 * (s + 512), NULL, CA_API_PLAIN);
    }
    for (int i = 0; i < 2; i++) {
        small[k++] = must(s, NULL, CA_API_PLAIN);
        must(512, NULL, CA_API_PLAIN);
    }
    must(2 * MiB - 2 * (s + 512), NULL, CA_API_PLAIN);
    assert_int_equal(k, 16);
    ca_free(A, fit, NULL, CA_API_PLAIN, NULL);
    for (int i = 0; i < 16; i++)
        ca_free(A, small[i], NULL, CA_API_PLAIN, NULL);
    fake_complete_all(&dev);
    void *g = NULL;
    assert_int_equal(ca_malloc(A, 0, f, NULL, CA_API_PLAIN, &g), CA_OK);
    assert_ptr_equal(g, fit);
    stop();
}

/* A same-stream free that lands while the allocation waits for fences is found afterwards. */
static void *Aa;

static void free_on_s1(void) { assert_int_equal(ca_free(A, Aa, S1, CA_API_ASYNC, NULL), CA_OK); }

static void test_free_during_wait_is_found(void **state)
{
    (void)state;
    start(4 * MiB, 0);
    ca_stream_created(A, 0, S1, 1);
    Aa = must(MiB, S1, CA_API_ASYNC);
    must(MiB, S1, CA_API_ASYNC);
    void *x = must(MiB, NULL, CA_API_PLAIN);
    must(MiB, NULL, CA_API_PLAIN);
    fake_work(&dev, S1);
    ca_free(A, x, NULL, CA_API_PLAIN, NULL);
    dev.on_event_sync = free_on_s1;
    void *y = NULL;
    assert_int_equal(ca_malloc(A, 0, MiB, S1, CA_API_ASYNC, &y), CA_OK);
    assert_true(y == Aa || y == x);
    stop();
}

/* A preallocation the driver refused leaves no error behind for the program to see. */
static void test_failed_prealloc_clears_error(void **state)
{
    (void)state;
    start(64 * MiB, 100 * MiB);
    void *p = must(MiB, NULL, CA_API_PLAIN);
    assert_non_null(p);
    assert_int_equal(dev.clears, 1);
    stop();
}

/* A device reset waits for a thread that holds the device's pools across a blocking wait. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int gate_open, in_wait, reset_done;

static void block_in_wait(void)
{
    pthread_mutex_lock(&gate_lock);
    in_wait = 1;
    pthread_cond_broadcast(&gate_cond);
    while (!gate_open)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
}

static void *allocator(void *arg)
{
    (void)arg;
    void *p = NULL;
    ca_malloc(A, 0, 3 * MiB, S1, CA_API_ASYNC, &p); /* waits for fences: the window */
    return NULL;
}

static void *resetter(void *arg)
{
    (void)arg;
    ca_device_reset(A, 0);
    __atomic_store_n(&reset_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void test_reset_waits_for_unlocked_window(void **state)
{
    (void)state;
    start(4 * MiB, 0);
    ca_stream_created(A, 0, S1, 1);
    void *x = must(3 * MiB, NULL, CA_API_PLAIN);
    fake_work(&dev, S1);
    ca_free(A, x, NULL, CA_API_PLAIN, NULL);
    dev.on_event_sync = block_in_wait;
    pthread_t ta, tr;
    pthread_create(&ta, NULL, allocator, NULL);
    pthread_mutex_lock(&gate_lock);
    while (!in_wait)
        pthread_cond_wait(&gate_cond, &gate_lock);
    pthread_mutex_unlock(&gate_lock);
    pthread_create(&tr, NULL, resetter, NULL);
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(__atomic_load_n(&reset_done, __ATOMIC_ACQUIRE), 0);
    pthread_mutex_lock(&gate_lock);
    gate_open = 1;
    pthread_cond_broadcast(&gate_cond);
    pthread_mutex_unlock(&gate_lock);
    pthread_join(ta, NULL);
    pthread_join(tr, NULL);
    assert_int_equal(reset_done, 1);
    ca_dev_stats st;
    ca_get_stats(A, 0, &st);
    assert_int_equal(st.reserved_bytes, 0);
    dev.nlive = 0; /* the runtime's reset freed the device's memory itself */
    dev.used = 0;
    stop();
}

/* Streams created and destroyed in a loop: each destroyed stream's last work gates only the
 * fences recorded after it, so memory keeps coming back and the cache does not grow. */
static void test_stream_churn_stays_bounded(void **state)
{
    (void)state;
    start(1ull << 30, 0);
    ca_stream_t prev = NULL;
    for (uintptr_t i = 1; i <= 2000; i++) {
        ca_stream_t s = (ca_stream_t)(0x100000 + i * 0x100);
        ca_stream_created(A, 0, s, 1);
        void *p = must(4096, s, CA_API_ASYNC);
        fake_work(&dev, s);
        assert_int_equal(ca_free(A, p, s, CA_API_ASYNC, NULL), CA_OK);
        ca_stream_destroyed(A, 0, s);
        if (prev)
            fake_complete(&dev, prev); /* the previous stream's work finishes meanwhile */
        fake_complete(&dev, NULL);
        prev = s;
    }
    ca_dev_stats st;
    ca_get_stats(A, 0, &st);
    assert_true(st.driver_alloc_calls <= 4);
    assert_true(st.reserved_bytes <= 8 * MiB);
    stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sync_does_not_cover_later_destroyed_stream),
        cmocka_unit_test(test_fitting_block_behind_the_scan_limit),
        cmocka_unit_test(test_free_during_wait_is_found),
        cmocka_unit_test(test_failed_prealloc_clears_error),
        cmocka_unit_test(test_reset_waits_for_unlocked_window),
        cmocka_unit_test(test_stream_churn_stays_bounded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
