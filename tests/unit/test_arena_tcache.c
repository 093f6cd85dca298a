/* Thread caches: a thread takes back what it freed itself, without the pools; nothing it keeps
 * reaches another thread or stream unsafely; the statistics count kept blocks as cached; a
 * miss, a device synchronization, a reclaim, the out-of-memory ladder and the thread's exit
 * give them back; a double free of a kept block is refused. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "arena_fixture.h"
#include "tcache/hit.h"
#include "arena/internal.h"

/* A block in the pools' own lists would show as a free block of the device: a kept one must
 * still count as cached, and the pools must not hand it out. */
static void test_hit_and_stats(void **state)
{
    fixture *f = *state;
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    must_free(f, x, NULL, CA_API_PLAIN);
    ca_dev_stats st = stats(f);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.requested_bytes, 0);
    assert_int_equal(st.cached_bytes, st.reserved_bytes);
    assert_int_equal(st.free_calls, 1);
    assert_int_equal(ca_lookup(f->a, x, NULL, NULL), 0); /* freed: not live */
    char *y = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(y, x);
    st = stats(f);
    assert_int_equal(st.allocated_bytes, MiB);
    assert_int_equal(st.requested_bytes, MiB);
    assert_int_equal(st.alloc_calls, 2);
    assert_int_equal(st.cache_hits, 1);
    assert_int_equal(ca_lookup(f->a, y, NULL, NULL), 1);
    assert_balanced(f);
    must_free(f, y, NULL, CA_API_PLAIN);
}

/* Another size misses: what the thread keeps goes back to the pools, which reuse it. */
static void test_miss_gives_back(void **state)
{
    fixture *f = *state;
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    must_free(f, x, NULL, CA_API_PLAIN);
    char *y = must_alloc(f, 512 * KiB, NULL, CA_API_PLAIN); /* split from x's block */
    assert_ptr_equal(y, x);
    assert_int_equal(f->dev.allocs, 1);
    must_free(f, y, NULL, CA_API_PLAIN);
    assert_balanced(f);
}

/* An allocation visits the thread's cache once past the inline hit: the newest kept block,
 * which that hit tried, is not tried again, older ones are; a miss moves every block the thread
 * keeps on the device out to the pools in the same visit. */
static void test_take_once_past_the_hit(void **state)
{
    fixture *f = *state;
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    char *y = must_alloc(f, 2 * MiB, NULL, CA_API_PLAIN);
    must_free(f, x, NULL, CA_API_PLAIN);
    must_free(f, y, NULL, CA_API_PLAIN); /* kept last: the newest */
    ca_tc_entry spill[CA_TC_KEPT];
    void *out = NULL;
    assert_int_equal(ca_tc_take(f->a, 0, MiB, NULL, CA_API_PLAIN, true, &out, spill), -1);
    assert_ptr_equal(out, x);
    out = NULL;
    assert_int_equal(ca_tc_take(f->a, 0, 2 * MiB, NULL, CA_API_PLAIN, true, &out, spill), 1);
    assert_null(out);
    assert_ptr_equal((void *)spill[0].addr, y);
    /* Nothing kept any more: even a visit that tries every block misses, and spills nothing. */
    assert_int_equal(ca_tc_take(f->a, 0, 2 * MiB, NULL, CA_API_PLAIN, false, &out, spill), 0);
    /* The spilled block goes back as the arena would send it: no longer kept, then freed. */
    __atomic_store_n(&ca_block_head_of(spill[0].b)->kept, 0, __ATOMIC_RELAXED);
    must_free(f, y, NULL, CA_API_PLAIN);
    must_free(f, x, NULL, CA_API_PLAIN);
    /* Without the inline hit's try, the newest is tried. */
    void *z = must_alloc(f, MiB, NULL, CA_API_PLAIN); /* x, kept last */
    must_free(f, z, NULL, CA_API_PLAIN);
    assert_int_equal(ca_tc_take(f->a, 0, MiB, NULL, CA_API_PLAIN, false, &out, spill), -1);
    assert_ptr_equal(out, z);
    must_free(f, z, NULL, CA_API_PLAIN);
    assert_balanced(f);
}

static char *other_got;

static void *other_alloc(void *arg)
{
    fixture *f = arg;
    other_got = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    return NULL;
}

static void *other_free(void *arg)
{
    fixture *f = arg;
    must_free(f, other_got, NULL, CA_API_PLAIN);
    return NULL;
}

/* What a thread keeps is never another thread's: two threads' per-thread default streams are
 * not ordered with each other. Its exit gives it back. */
static void test_other_thread_and_exit(void **state)
{
    fixture *f = *state;
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    must_free(f, x, NULL, CA_API_PLAIN);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_alloc, f), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_ptr_not_equal(other_got, x);
    /* The other thread frees and exits: its block goes back to the pools. */
    assert_int_equal(pthread_create(&t, NULL, other_free, f), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    ca_dev_stats st = stats(f);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.free_calls, 2);
    assert_balanced(f);
    /* Ours misses on another size and gives x back: one segment served all of it. */
    char *half = must_alloc(f, 512 * KiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(half, x < other_got ? x : other_got);
    assert_int_equal(f->dev.allocs, 1);
    assert_int_equal(stats(f).cached_bytes, 2 * MiB - 512 * KiB);
    must_free(f, half, NULL, CA_API_PLAIN);
}

static void *pairs_then_exit(void *arg)
{
    fixture *f = arg;
    for (int i = 0; i < 3; i++)
        must_free(f, must_alloc(f, MiB, NULL, CA_API_PLAIN), NULL, CA_API_PLAIN);
    return NULL;
}

/* A thread's hits and frees stay counted after it exits. */
static void test_counts_survive_exit(void **state)
{
    fixture *f = *state;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, pairs_then_exit, f), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    ca_dev_stats st = stats(f);
    assert_int_equal(st.alloc_calls, 3);
    assert_int_equal(st.cache_hits, 2);
    assert_int_equal(st.free_calls, 3);
    assert_int_equal(st.allocated_bytes, 0);
    assert_balanced(f);
}

/* Once a created stream exists, a block kept from a plain free may have been used on it: the
 * thread no longer takes it back without the pools' fence. */
static void test_plain_after_stream_waits_for_fence(void **state)
{
    fixture *f = *state;
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    must_free(f, x, NULL, CA_API_PLAIN);
    ca_stream_created(f->a, 0, S1, 1);
    char *x2 = must_alloc(f, MiB, NULL, CA_API_PLAIN); /* kept before: safe by the switch */
    fake_work(&f->dev, S1);                              /* S1 may now use x2 */
    must_free(f, x2, NULL, CA_API_PLAIN);                /* not kept: fenced */
    char *y = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_ptr_not_equal(y, x2);
    fake_complete(&f->dev, S1);
    char *z = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(z, x2);
    must_free(f, y, NULL, CA_API_PLAIN);
    must_free(f, z, NULL, CA_API_PLAIN);
    assert_balanced(f);
}

/* Kept while the device had no stream but was fenced already (a second thread's default
 * stream): a stream created then brings no synchronization, so the block, still in use on
 * the default stream, must wait for a fence before the thread may use it on the new one. */
static void test_plain_kept_before_stream_without_switch(void **state)
{
    fixture *f = *state;
    ca_stream_seen(f->a, 0, CA_STREAM_LEGACY);
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    fake_work(&f->dev, CA_STREAM_LEGACY);
    must_free(f, x, NULL, CA_API_PLAIN);
    uint64_t syncs = f->dev.device_syncs;
    ca_stream_created(f->a, 0, S1, 1);
    assert_int_equal(f->dev.device_syncs, syncs);
    char *y = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_ptr_not_equal(y, x);
    fake_complete_all(&f->dev);
    must_free(f, y, NULL, CA_API_PLAIN);
    assert_balanced(f);
}

/* A stream-ordered block is taken back on its own stream only, and not after the stream died
 * (a new stream may get its handle). */
static void test_async_same_stream_only(void **state)
{
    fixture *f = *state;
    ca_stream_created(f->a, 0, S1, 1);
    ca_stream_created(f->a, 0, S2, 1);
    char *x = must_alloc(f, MiB, S1, CA_API_ASYNC);
    fake_work(&f->dev, S1);
    must_free(f, x, S1, CA_API_ASYNC);
    char *y = must_alloc(f, MiB, S2, CA_API_ASYNC);
    assert_ptr_not_equal(y, x);
    char *z = must_alloc(f, MiB, S1, CA_API_ASYNC);
    assert_ptr_equal(z, x);
    must_free(f, z, S1, CA_API_ASYNC);
    ca_stream_destroyed(f->a, 0, S1);
    ca_stream_created(f->a, 0, S1, 1); /* the handle again: another stream */
    char *w = must_alloc(f, MiB, S1, CA_API_ASYNC);
    assert_ptr_not_equal(w, x);
    must_free(f, w, S1, CA_API_ASYNC);
    must_free(f, y, S2, CA_API_ASYNC);
    fake_complete_all(&f->dev);
}

static void test_double_free_refused(void **state)
{
    fixture *f = *state;
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    must_free(f, x, NULL, CA_API_PLAIN);
    assert_int_equal(ca_free(f->a, x, NULL, CA_API_PLAIN, NULL), CA_ERR_INVALID);
    assert_int_equal(stats(f).invalid_frees, 1);
    char *y = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    char *z = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(y, x);
    assert_ptr_not_equal(z, x); /* handed out once */
    must_free(f, y, NULL, CA_API_PLAIN);
    must_free(f, z, NULL, CA_API_PLAIN);
    assert_balanced(f);
}

/* A reclaim gives back what the threads keep, so empty segments can go to the driver. */
static void test_reclaim_empties(void **state)
{
    fixture *f = *state;
    char *x = must_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    must_free(f, x, NULL, CA_API_PLAIN);
    assert_true(ca_reclaim(f->a, 0) > 0);
    assert_int_equal(f->dev.releases, 1);
    assert_int_equal(stats(f).reserved_bytes, 0);
}

/* A device synchronization gives them back first, so that it covers them. */
static void test_sync_gives_back(void **state)
{
    fixture *f = *state;
    char *x = must_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    must_free(f, x, NULL, CA_API_PLAIN);
    uint64_t token = ca_device_sync_begin(f->a, 0);
    ca_device_synchronized(f->a, 0, token);
    /* The pools hold it now: another size is split from it. */
    char *y = must_alloc(f, 2 * MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(y, x);
    must_free(f, y, NULL, CA_API_PLAIN);
}

static void *fill_other(void *arg)
{
    fixture *f = arg;
    void *p[3];
    for (int i = 0; i < 3; i++)
        p[i] = must_alloc(f, 8 * MiB, NULL, CA_API_PLAIN);
    for (int i = 0; i < 3; i++)
        must_free(f, p[i], NULL, CA_API_PLAIN);
    return NULL;
}

static int block_thread_until;

static void *keep_and_wait(void *arg)
{
    fill_other(arg);
    while (!__atomic_load_n(&block_thread_until, __ATOMIC_ACQUIRE))
        ;
    return NULL;
}

/* Another thread keeps most of the device: the ladder takes it back rather than failing. */
static void test_oom_ladder_collects(void **state)
{
    (void)state;
    fixture *f = fx_start_tcache(32 * MiB);
    block_thread_until = 0;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, keep_and_wait, f), 0);
    while (stats(f).free_calls < 3)
        ;
    char *p = must_alloc(f, 24 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).oom_failures, 0);
    must_free(f, p, NULL, CA_API_PLAIN);
    __atomic_store_n(&block_thread_until, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_balanced(f);
    fx_finish(f);
}

#define HIT_THREADS 4
#define HIT_PAIRS 20000

static int hitters_left, collecting;

static void *hit_pairs(void *arg)
{
    fixture *f = arg;
    /* Not before the collector has begun: on a loaded machine the hitters could otherwise be
     * done before it ran once, and nothing would have been collected while they hit. */
    while (!__atomic_load_n(&collecting, __ATOMIC_ACQUIRE))
        sched_yield();
    for (int i = 0; i < HIT_PAIRS; i++)
        must_free(f, must_alloc(f, MiB, NULL, CA_API_PLAIN), NULL, CA_API_PLAIN);
    __atomic_fetch_sub(&hitters_left, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Threads hit their caches while another thread collects them (reclaims) and sums them
 * (statistics) over and over: a cache's thread only tries its lock and misses when a collector
 * holds it, so no call fails, no block is lost or handed out twice, and every call is counted
 * once (ThreadSanitizer checks the lock in CI's --tsan run). */
static void test_collect_while_threads_hit(void **state)
{
    fixture *f = *state;
    pthread_t t[HIT_THREADS];
    hitters_left = HIT_THREADS;
    collecting = 0;
    for (int i = 0; i < HIT_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hit_pairs, f), 0);
    int rounds = 0;
    do {
        ca_reclaim(f->a, 0);
        (void)stats(f);
        if (rounds++ == 0)
            __atomic_store_n(&collecting, 1, __ATOMIC_RELEASE);
    } while (__atomic_load_n(&hitters_left, __ATOMIC_ACQUIRE) > 0);
    for (int i = 0; i < HIT_THREADS; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    ca_dev_stats st = stats(f);
    assert_int_equal(st.alloc_calls, HIT_THREADS * HIT_PAIRS);
    assert_int_equal(st.free_calls, HIT_THREADS * HIT_PAIRS);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.oom_failures, 0);
    assert_true(rounds > 0);
    assert_balanced(f);
}

/* The device's reset forgets what threads keep there without touching it. */
static void test_reset_forgets(void **state)
{
    fixture *f = *state;
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    must_free(f, x, NULL, CA_API_PLAIN);
    ca_device_reset(f->a, 0);
    f->dev.nlive = 0; /* the reset freed the device's memory */
    f->dev.used = 0;
    char *y = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_int_equal(f->dev.allocs, 2); /* a new segment, not the forgotten block */
    must_free(f, y, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).allocated_bytes, 0);
}

static pthread_key_t late_key;
static fixture *late_f;

/* First round: ask for a second one, after every other key's destructor ran once. */
static void late_pairs(void *round)
{
    if ((uintptr_t)round == 1) {
        pthread_setspecific(late_key, (void *)2);
        return;
    }
    for (int i = 0; i < 3; i++)
        must_free(late_f, must_alloc(late_f, MiB, NULL, CA_API_PLAIN), NULL, CA_API_PLAIN);
}

static void *pairs_then_late(void *arg)
{
    fixture *f = arg;
    must_free(f, must_alloc(f, MiB, NULL, CA_API_PLAIN), NULL, CA_API_PLAIN);
    assert_int_equal(pthread_setspecific(late_key, (void *)1), 0);
    return NULL;
}

/* A thread's destructor that allocates after the thread's cache was retired leaves no cache
 * behind (nothing would ever retire it): once the thread is gone, no cache keeps a block. */
static void test_late_destructor_leaves_no_cache(void **state)
{
    fixture *f = *state;
    late_f = f;
    /* The thread caches' exit key exists before this one: its destructor runs first. */
    must_free(f, must_alloc(f, MiB, NULL, CA_API_PLAIN), NULL, CA_API_PLAIN);
    assert_int_equal(pthread_key_create(&late_key, late_pairs), 0);
    ca_reclaim(f->a, -1);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, pairs_then_late, f), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    ca_tc_entry *list;
    int n = ca_tc_return_all(f->a, -1, &list);
    if (n > 0) {
        f->a->return_kept_list(f->a, list, n);
        free(list);
    }
    pthread_key_delete(late_key);
    assert_int_equal(n, 0);
    assert_balanced(f);
}

/* A destroyed arena frees its caches while their threads' slots still name them. A later
 * arena of the same slot retires what the slot names only when it is still that arena's
 * cache: the freed address may be another arena's live cache by then (glibc hands the live
 * arena's cache the very address here; ASan's quarantine does not, so the case only arises
 * in the plain build). */
static void test_destroyed_arena_slot_reused(void **state)
{
    (void)state;
    fixture *gone = fx_start_tcache(GiB);
    must_free(gone, must_alloc(gone, MiB, NULL, CA_API_PLAIN), NULL, CA_API_PLAIN);
    fx_finish(gone);
    fixture *live = fx_start_tcache(GiB); /* its cache may take the freed one's address */
    char *x = must_alloc(live, MiB, NULL, CA_API_PLAIN);
    fixture *other[CA_TC_ARENAS - 1]; /* the last shares the destroyed arena's slot */
    for (int i = 0; i < CA_TC_ARENAS - 1; i++) {
        other[i] = fx_start_tcache(GiB);
        must_free(other[i], must_alloc(other[i], MiB, NULL, CA_API_PLAIN), NULL, CA_API_PLAIN);
    }
    /* The live arena's cache is still the thread's: it remembers what it hands out. */
    must_free(live, x, NULL, CA_API_PLAIN);
    char *y = must_alloc(live, 2 * MiB, NULL, CA_API_PLAIN);
    int dev;
    size_t requested;
    assert_true(ca_tc_issued(live->a, y, &dev, &requested));
    must_free(live, y, NULL, CA_API_PLAIN);
    assert_int_equal(stats(live).allocated_bytes, 0);
    for (int i = 0; i < CA_TC_ARENAS - 1; i++)
        fx_finish(other[i]);
    fx_finish(live);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FX_TCACHE_TEST(test_hit_and_stats),
        FX_TCACHE_TEST(test_miss_gives_back),
        FX_TCACHE_TEST(test_take_once_past_the_hit),
        FX_TCACHE_TEST(test_other_thread_and_exit),
        FX_TCACHE_TEST(test_counts_survive_exit),
        FX_TCACHE_TEST(test_plain_after_stream_waits_for_fence),
        FX_TCACHE_TEST(test_plain_kept_before_stream_without_switch),
        FX_TCACHE_TEST(test_async_same_stream_only),
        FX_TCACHE_TEST(test_double_free_refused),
        FX_TCACHE_TEST(test_reclaim_empties),
        FX_TCACHE_TEST(test_sync_gives_back),
        cmocka_unit_test(test_oom_ladder_collects),
        FX_TCACHE_TEST(test_reset_forgets),
        FX_TCACHE_TEST(test_collect_while_threads_hit),
        FX_TCACHE_TEST(test_late_destructor_leaves_no_cache),
        cmocka_unit_test(test_destroyed_arena_slot_reused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
