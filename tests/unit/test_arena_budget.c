/* Pending memory and growth: loops of allocations and frees whose fences complete only when
 * the arena waits for them must not grow the cache past twice the working set plus one
 * segment, and every block still goes back out only once its own fence completed. */
#include <pthread.h>
#include <semaphore.h>
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
#define SMALL_SEGMENT (2 * MiB) /* segment of requests up to 1 MiB */
#define MID_SEGMENT (20 * MiB)  /* segment of requests from 1 to 10 MiB */

/* Which S1 work each freed block waits for, to check every reuse against it. */
#define TRACK 4096
static struct { void *p; uint64_t s1; } freed[TRACK];

static fake_device dev;
static ca_backend be;
static ca_arena *A;

static void start_with(ca_fences_kind fences)
{
    fake_init(&dev, &be, (uint64_t)64 << 30);
    ca_config cfg = {.pool = CA_POOL_SPLIT, .reuse = CA_REUSE_SAFE, .fences = fences,
                     .release_threshold = UINT64_MAX, .max_split = UINT64_MAX, .quiet = 1};
    A = ca_arena_create(&be, &cfg);
    memset(freed, 0, sizeof freed);
    /* A non-blocking stream: plain frees now wait for fences that include it. */
    ca_stream_created(A, 0, S1, 1);
}

static void start(void) { start_with(CA_FENCES_EVENTS); }

static void stop(void)
{
    fake_complete_all(&dev);
    ca_arena_destroy(A);
    assert_int_equal(dev.nlive, 0);
}

static ca_dev_stats stats(void)
{
    ca_dev_stats st = {0};
    ca_get_stats(A, 0, &st);
    return st;
}

static void *must(size_t n)
{
    void *p = NULL;
    assert_int_equal(ca_malloc(A, 0, n, NULL, CA_API_PLAIN, &p), CA_OK);
    assert_non_null(p);
    return p;
}

/* A kernel on S1 still uses p when it is freed: S1 never gets further unless someone waits. */
static void free_in_use(void *p)
{
    fake_work(&dev, S1);
    assert_int_equal(ca_free(A, p, NULL, CA_API_PLAIN, NULL), CA_OK);
}


static void note_free(void *p)
{
    for (int i = 0; i < TRACK; i++) {
        if (freed[i].p == p || !freed[i].p) {
            freed[i].p = p;
            freed[i].s1 = fake_enqueued(&dev, S1);
            return;
        }
    }
    fail_msg("more than %d distinct blocks", TRACK);
}

static void assert_safe_reuse(void *p)
{
    for (int i = 0; i < TRACK && freed[i].p; i++)
        if (freed[i].p == p)
            assert_true(fake_done(&dev, S1, freed[i].s1));
}

static void test_one_size_loop_stays_bounded(void **state)
{
    (void)state;
    start();
    for (int i = 0; i < 2000; i++) {
        void *p = must(MiB);
        assert_safe_reuse(p);
        note_free(p);
        free_in_use(p);
        ca_dev_stats st = stats();
        /* Working set: one block. */
        assert_true(st.reserved_bytes <= 2 * MiB + SMALL_SEGMENT);
        assert_int_equal(st.reserved_bytes,
                         st.allocated_bytes + st.cached_bytes + st.pending_bytes);
    }
    assert_true(dev.allocs <= 2);
    assert_true(dev.event_syncs > 0); /* it waited: nothing completes otherwise */
    /* The statistics count those waits and their time; the one device synchronization is the
     * switch to fences, at the stream's creation. */
    ca_dev_stats st = stats();
    assert_true(st.fence_waits > 0 && st.fence_wait_ns > 0);
    assert_int_equal(st.device_syncs, 1);
    stop();
}

/* The same loop under the other two policies: CACHEALLOC_FENCES=device synchronizes, counted
 * with its time; auto (the learned policy) tries both ways, and every reuse is still safe
 * whichever way is in force when it happens. */
static void policy_loop(ca_fences_kind fences)
{
    start_with(fences);
    for (int i = 0; i < 2000; i++) {
        void *p = must(MiB);
        assert_safe_reuse(p);
        note_free(p);
        free_in_use(p);
        assert_true(stats().reserved_bytes <= 2 * MiB + SMALL_SEGMENT);
    }
    ca_dev_stats st = stats();
    assert_true(st.device_syncs > 1 && st.sync_wait_ns > 0);
    if (fences == CA_FENCES_DEVICE)
        assert_true(dev.records == 0 && st.fence_waits == 0);
    else
        assert_true(dev.records > 0 && st.fences > 0); /* the events way was tried */
    stop();
}

/* CACHEALLOC_RESERVE_FACTOR=4: the loop grows to four times its working set before it waits,
 * and waits less often than at the default's two. */
static void test_reserve_factor_bounds_growth(void **state)
{
    (void)state;
    uint64_t syncs[2];
    for (int k = 0; k < 2; k++) {
        fake_init(&dev, &be, (uint64_t)64 << 30);
        ca_config cfg = {.pool = CA_POOL_SPLIT, .reuse = CA_REUSE_SAFE,
                         .fences = CA_FENCES_DEVICE, .reserve_factor = k ? 4 : 2,
                         .release_threshold = UINT64_MAX, .max_split = UINT64_MAX, .quiet = 1};
        A = ca_arena_create(&be, &cfg);
        memset(freed, 0, sizeof freed);
        ca_stream_created(A, 0, S1, 1);
        uint64_t peak = 0;
        for (int i = 0; i < 1000; i++) {
            void *p = must(MiB);
            assert_safe_reuse(p);
            note_free(p);
            free_in_use(p);
            if (stats().reserved_bytes > peak)
                peak = stats().reserved_bytes;
        }
        /* Twice or four times the working set of one block, plus one 2 MiB segment. */
        assert_true(peak <= (k ? 4 : 2) * MiB + SMALL_SEGMENT);
        assert_true(peak > (k ? 2 * MiB + SMALL_SEGMENT : 0));
        syncs[k] = stats().device_syncs;
        stop();
    }
    assert_true(syncs[1] < syncs[0]);
}

static void test_device_policy_counts_its_syncs(void **state)
{
    (void)state;
    policy_loop(CA_FENCES_DEVICE);
}

static void test_learned_policy_tries_both_safely(void **state)
{
    (void)state;
    policy_loop(CA_FENCES_AUTO);
}

static void test_wait_takes_oldest_fence_only(void **state)
{
    (void)state;
    start();
    void *x = must(MiB), *y = must(MiB); /* one 2 MiB segment */
    free_in_use(x);
    void *z = must(MiB); /* x's fence recorded; within budget, so a second segment */
    free_in_use(y);
    void *w = must(MiB); /* y's fence */
    free_in_use(z);
    free_in_use(w);
    uint64_t y_work = 2;
    assert_int_equal(dev.allocs, 2);
    /* Nothing allocated, 4 MiB reserved, all of it pending: over budget for 1 MiB. The oldest
     * fence (x's) covers the request: only it is waited for. */
    void *v = must(MiB);
    assert_ptr_equal(v, x);
    assert_int_equal(dev.allocs, 2);
    assert_false(fake_done(&dev, S1, y_work));
    assert_int_equal(stats().pending_bytes, 3 * MiB); /* y, z and w still wait */
    assert_int_equal(ca_free(A, v, NULL, CA_API_PLAIN, NULL), CA_OK);
    stop();
}

static void test_ring_of_live_blocks_stays_bounded(void **state)
{
    (void)state;
    start();
    enum { LIVE = 4 };
    void *ring[LIVE];
    for (int i = 0; i < LIVE; i++)
        ring[i] = must(MiB);
    for (int i = 0; i < 2000; i++) {
        void *old = ring[i % LIVE];
        note_free(old);
        free_in_use(old);
        ring[i % LIVE] = must(MiB);
        assert_safe_reuse(ring[i % LIVE]);
        assert_true(stats().reserved_bytes <= 2 * LIVE * MiB + SMALL_SEGMENT);
    }
    for (int i = 0; i < LIVE; i++)
        free_in_use(ring[i]);
    stop();
}

static void test_mixed_sizes_stay_bounded(void **state)
{
    (void)state;
    start();
    uint64_t rng = 88172645463325252ull;
    size_t largest = 0;
    for (int i = 0; i < 2000; i++) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        size_t n = MiB + (size_t)(rng % (7 * MiB));
        largest = n > largest ? n : largest;
        void *p = must(n);
        assert_safe_reuse(p);
        note_free(p);
        free_in_use(p);
        assert_true(stats().reserved_bytes <= 2 * largest + MID_SEGMENT);
    }
    stop();
}

/* Another thread takes what each wait freed, and frees it again, while the waiter has its lock
 * dropped: after a few such rounds the waiter waits alone (the other thread's allocation waits
 * for it) and is served without growing. Fences cannot be recorded here, so every wait is a
 * device synchronization, and the fake runs the hook inside each. */
static sem_t go, done;
static pthread_t waiter;
static int stopping, steal_failures;

static void *stealer(void *arg)
{
    (void)arg;
    for (;;) {
        sem_wait(&go);
        if (stopping)
            return NULL;
        /* No cmocka assertion off the test's thread: failures are counted. */
        void *taken[8];
        int n = 0;
        do {
            void *p = NULL; /* the first one waits for the device itself */
            if (ca_malloc(A, 0, MiB, NULL, CA_API_PLAIN, &p) != CA_OK || !p) {
                steal_failures++;
                break;
            }
            taken[n++] = p;
        } while (n < 8 && stats().cached_bytes >= MiB);
        while (n > 0) {
            fake_work(&dev, S1);
            if (ca_free(A, taken[--n], NULL, CA_API_PLAIN, NULL) != CA_OK)
                steal_failures++;
        }
        sem_post(&done);
    }
}

static void let_stealer_run(void)
{
    if (pthread_equal(pthread_self(), waiter)) {
        sem_post(&go);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000 * 1000; /* the stealer blocked on the waiter: go on */
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        sem_timedwait(&done, &ts);
    }
    __atomic_store_n(&dev.on_device_sync, let_stealer_run, __ATOMIC_RELEASE);
}

static void test_starved_wait_is_served_alone(void **state)
{
    (void)state;
    start();
    void *b[4];
    for (int i = 0; i < 4; i++)
        b[i] = must(MiB);
    for (int i = 0; i < 4; i++)
        free_in_use(b[i]);
    uint64_t allocs = dev.allocs;
    dev.record_fails_for = fake_stream(&dev, S1);
    sem_init(&go, 0, 0);
    sem_init(&done, 0, 0);
    stopping = steal_failures = 0;
    waiter = pthread_self();
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, stealer, NULL), 0);
    dev.on_device_sync = let_stealer_run;
    void *p = must(MiB); /* over budget: 4 MiB reserved, nothing allocated */
    assert_int_equal(dev.allocs, allocs);
    assert_int_equal(ca_free(A, p, NULL, CA_API_PLAIN, NULL), CA_OK);
    sem_wait(&done); /* the stealer's last round, let go by the waiter's return */
    dev.on_device_sync = NULL;
    stopping = 1;
    sem_post(&go);
    pthread_join(t, NULL);
    assert_int_equal(steal_failures, 0);
    assert_int_equal(dev.allocs, allocs);
    sem_destroy(&go);
    sem_destroy(&done);
    dev.record_fails_for = -1;
    stop();
}

/* Threads at once: growth stays within twice the threads' blocks plus a segment. */
enum { THREADS = 4, PAIRS = 2000 };

static void *loop(void *arg)
{
    (void)arg;
    for (int i = 0; i < PAIRS; i++) {
        void *p = NULL;
        if (ca_malloc(A, 0, MiB, NULL, CA_API_PLAIN, &p) != CA_OK || !p)
            return (void *)1;
        fake_work(&dev, S1);
        if (ca_free(A, p, NULL, CA_API_PLAIN, NULL) != CA_OK)
            return (void *)1;
    }
    return NULL;
}

static void test_threads_stay_bounded(void **state)
{
    (void)state;
    start();
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, loop, NULL), 0);
    for (int i = 0; i < THREADS; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        assert_null(rc);
    }
    assert_true(stats().peak_reserved_bytes <= 2 * THREADS * MiB + SMALL_SEGMENT);
    stop();
}

/* A working set that swings: four blocks allocated, then all four freed, again and again. In
 * the trough nothing is allocated, and a budget on what is allocated now would synchronize at
 * every first allocation; once a whole window of allocations has shown the peak of four, the
 * budget is on it, the cache grows to twice it and synchronizes about half as often, within
 * the bound and with every reuse safe. */
static void test_swinging_working_set_budget_on_its_peak(void **state)
{
    (void)state;
    start_with(CA_FENCES_DEVICE);
    enum { ROUNDS = 1024, BLOCKS = 4 };
    uint64_t syncs_at[2] = {0, 0};
    for (int i = 0; i < ROUNDS; i++) {
        if (i == ROUNDS / 2)
            syncs_at[0] = stats().device_syncs;
        void *p[BLOCKS];
        for (int k = 0; k < BLOCKS; k++) {
            p[k] = must(MiB);
            assert_safe_reuse(p[k]);
        }
        for (int k = 0; k < BLOCKS; k++) {
            note_free(p[k]);
            free_in_use(p[k]);
        }
        assert_true(stats().reserved_bytes <= 2 * BLOCKS * MiB + SMALL_SEGMENT);
    }
    syncs_at[1] = stats().device_syncs;
    /* The first window (256 rounds) synchronized about once a round; from the second half on,
     * once every two rounds at most. */
    uint64_t late = syncs_at[1] - syncs_at[0];
    print_message("synchronizations: %llu in the first half, %llu in the second\n",
                  (unsigned long long)syncs_at[0], (unsigned long long)late);
    assert_true(syncs_at[0] >= ROUNDS / 4);
    assert_true(late <= ROUNDS / 4 + 2);
    stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_size_loop_stays_bounded),
        cmocka_unit_test(test_device_policy_counts_its_syncs),
        cmocka_unit_test(test_reserve_factor_bounds_growth),
        cmocka_unit_test(test_learned_policy_tries_both_safely),
        cmocka_unit_test(test_wait_takes_oldest_fence_only),
        cmocka_unit_test(test_ring_of_live_blocks_stays_bounded),
        cmocka_unit_test(test_mixed_sizes_stay_bounded),
        cmocka_unit_test(test_starved_wait_is_served_alone),
        cmocka_unit_test(test_threads_stay_bounded),
        cmocka_unit_test(test_swinging_working_set_budget_on_its_peak),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
