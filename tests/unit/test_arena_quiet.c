/* The arena while a stream capture is under way (ca_quiet_begin .. ca_quiet_end): no backend
 * call at all, whatever the program does; what is certainly reusable is served, the rest is
 * refused for the caller to forward; what needed the device is done after the capture; and
 * quiet_begin does not return while another thread is inside a backend call. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#include "arena/arena.h"
#include "fake_backend.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define S1 ((ca_stream_t)0x1000)
#define S2 ((ca_stream_t)0x2000)

static fake_device dev;
static ca_backend be;
static ca_arena *A;

static void start(ca_pool_kind pool)
{
    fake_init(&dev, &be, 1024 * MiB);
    ca_config cfg = {.pool = pool, .reuse = CA_REUSE_SAFE, .release_threshold = UINT64_MAX,
                     .max_split = UINT64_MAX, .quiet = 1};
    A = ca_arena_create(&be, &cfg);
}

static void stop(void)
{
    fake_complete_all(&dev);
    ca_arena_destroy(A);
    assert_int_equal(dev.nlive, 0);
}

/* Every backend call the fake counts. */
static uint64_t calls(void)
{
    return dev.allocs + dev.releases + dev.device_syncs + dev.event_syncs + dev.records +
           dev.queries;
}

static void *must(size_t n, ca_stream_t s, unsigned api)
{
    void *p = NULL;
    assert_int_equal(ca_malloc(A, 0, n, s, api, &p), CA_OK);
    return p;
}

static ca_status try_alloc(size_t n, ca_stream_t s, unsigned api, void **p)
{
    *p = NULL;
    return ca_malloc(A, 0, n, s, api, p);
}

/* Plain and stream-ordered frees and allocations on a fenced device: served from free blocks
 * with no call; plain frees wait (no fence can be recorded); a request that would grow is
 * refused; after the capture the pending blocks are fenced and reused. */
static void test_serves_without_calls(void **state)
{
    (void)state;
    start(CA_POOL_SPLIT);
    ca_stream_created(A, 0, S1, 1);
    void *warm = must(64 * KiB, NULL, CA_API_PLAIN);
    void *w1 = must(64 * KiB, S1, CA_API_ASYNC);
    assert_int_equal(ca_free(A, warm, NULL, CA_API_PLAIN, NULL), CA_OK);
    assert_int_equal(ca_free(A, w1, S1, CA_API_ASYNC, NULL), CA_OK);
    fake_complete_all(&dev);
    ca_device_synchronized(A, 0, ca_device_sync_begin(A, 0));

    ca_quiet_begin(A);
    uint64_t before = calls();
    void *p[8];
    for (int i = 0; i < 8; i++) {
        p[i] = must(4 * KiB, NULL, CA_API_PLAIN);
        assert_int_equal(ca_free(A, p[i], NULL, CA_API_PLAIN, NULL), CA_OK);
    }
    for (int i = 0; i < 8; i++) {
        void *q = must(4 * KiB, S1, CA_API_ASYNC);
        assert_int_equal(ca_free(A, q, S1, CA_API_ASYNC, NULL), CA_OK);
    }
    void *big;
    assert_int_equal(try_alloc(64 * MiB, NULL, CA_API_PLAIN, &big), CA_ERR_BACKEND);
    assert_null(big);
    assert_int_equal(ca_reclaim(A, -1), 0);
    ca_dev_stats st;
    ca_get_stats(A, 0, &st);
    assert_int_equal(st.pending_bytes, 8 * 4 * KiB);
    assert_int_equal(st.oom_failures, 0);
    assert_int_equal(calls(), before);
    ca_quiet_end(A);

    void *r = must(4 * KiB, NULL, CA_API_PLAIN); /* records the owed fence */
    assert_true(dev.records > 0);
    assert_int_equal(ca_free(A, r, NULL, CA_API_PLAIN, NULL), CA_OK);
    stop();
}

/* A stream that appears, and one that goes, during a capture: the device synchronization they
 * need is made after it, and until then the device serves nothing quietly. */
static void test_owed_synchronization(void **state)
{
    (void)state;
    start(CA_POOL_SPLIT);
    void *warm = must(64 * KiB, NULL, CA_API_PLAIN);
    assert_int_equal(ca_free(A, warm, NULL, CA_API_PLAIN, NULL), CA_OK);

    ca_quiet_begin(A);
    uint64_t before = calls();
    ca_stream_created(A, 0, S1, 1); /* ends single-stream mode: a synchronization is owed */
    void *p;
    assert_int_equal(try_alloc(4 * KiB, NULL, CA_API_PLAIN, &p), CA_ERR_BACKEND);
    assert_int_equal(try_alloc(4 * KiB, S1, CA_API_ASYNC, &p), CA_ERR_BACKEND);
    assert_int_equal(calls(), before);
    ca_quiet_end(A);

    p = must(4 * KiB, S1, CA_API_ASYNC);
    assert_int_equal(dev.device_syncs, 1);
    assert_int_equal(ca_free(A, p, S1, CA_API_ASYNC, NULL), CA_OK);

    ca_quiet_begin(A);
    before = calls();
    ca_stream_destroyed(A, 0, S1); /* its last work cannot be watched with an event now */
    assert_int_equal(calls(), before);
    ca_quiet_end(A);
    p = must(4 * KiB, NULL, CA_API_PLAIN);
    assert_int_equal(dev.device_syncs, 2);
    assert_int_equal(ca_free(A, p, NULL, CA_API_PLAIN, NULL), CA_OK);
    stop();
}

/* CACHEALLOC_POOL=none: every call goes to the driver, except during a capture, where a free
 * keeps its segment until the capture is over and an allocation is refused. */
static void test_pool_none(void **state)
{
    (void)state;
    start(CA_POOL_NONE);
    void *p = must(4 * KiB, NULL, CA_API_PLAIN);
    ca_quiet_begin(A);
    uint64_t before = calls();
    assert_int_equal(ca_free(A, p, NULL, CA_API_PLAIN, NULL), CA_OK);
    assert_int_equal(try_alloc(4 * KiB, NULL, CA_API_PLAIN, &p), CA_ERR_BACKEND);
    assert_int_equal(calls(), before);
    ca_quiet_end(A);
    uint64_t releases = dev.releases;
    p = must(4 * KiB, NULL, CA_API_PLAIN);
    assert_int_equal(dev.releases, releases + 1);
    assert_int_equal(ca_free(A, p, NULL, CA_API_PLAIN, NULL), CA_OK);
    stop();
}

/* A thread inside an unlocked window (synchronizing the device) when a capture begins: the
 * beginning waits for its call to return. */
static volatile int in_window, window_done;

static void slow_device_sync(void)
{
    __atomic_store_n(&in_window, 1, __ATOMIC_SEQ_CST);
    struct timespec t = {0, 50 * 1000 * 1000};
    nanosleep(&t, NULL);
    __atomic_store_n(&window_done, 1, __ATOMIC_SEQ_CST);
}

static void *create_stream(void *unused)
{
    (void)unused;
    ca_stream_created(A, 0, S2, 1); /* the switch to fences synchronizes the device */
    return NULL;
}

static void test_begin_waits_for_calls_in_flight(void **state)
{
    (void)state;
    start(CA_POOL_SPLIT);
    void *p = must(4 * KiB, NULL, CA_API_PLAIN);
    dev.on_device_sync = slow_device_sync;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, create_stream, NULL), 0);
    while (!__atomic_load_n(&in_window, __ATOMIC_SEQ_CST))
        ;
    ca_quiet_begin(A);
    assert_true(__atomic_load_n(&window_done, __ATOMIC_SEQ_CST));
    assert_int_equal(pthread_join(t, NULL), 0);
    ca_quiet_end(A);
    assert_int_equal(ca_free(A, p, NULL, CA_API_PLAIN, NULL), CA_OK);
    stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_serves_without_calls),
        cmocka_unit_test(test_owed_synchronization),
        cmocka_unit_test(test_pool_none),
        cmocka_unit_test(test_begin_waits_for_calls_in_flight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
