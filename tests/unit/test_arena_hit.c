/* The inline hit of a thread cache (src/tcache/hit.h), as the shim's lane calls it: it
 * serves only the calling thread's newest kept block of the same size, device, API and
 * stream; it keeps only a live block the thread was handed itself, of the caller's device,
 * while there is room; everything else is left to ca_malloc and ca_free. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arena_fixture.h"
#include "tcache/hit.h"

/* A free kept and taken back on the hit path counts as the device's calls and as cached. */
static void test_keep_and_take(void **state)
{
    fixture *f = *state;
    ca_tcache *tc = ca_tc_thread_cache(f->a);
    assert_non_null(tc);
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_true(ca_free_hit(tc, x, NULL, CA_API_PLAIN, 0));
    ca_dev_stats st = stats(f);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.cached_bytes, st.reserved_bytes);
    assert_int_equal(st.free_calls, 1);
    void *y = NULL;
    assert_false(ca_malloc_hit(tc, 0, 2 * MiB, NULL, CA_API_PLAIN, &y)); /* another size */
    assert_false(ca_malloc_hit(tc, 1, MiB, NULL, CA_API_PLAIN, &y));     /* another device */
    assert_false(ca_malloc_hit(tc, 0, MiB, S1, CA_API_ASYNC, &y));       /* another API */
    assert_null(y);
    assert_true(ca_malloc_hit(tc, 0, MiB, NULL, CA_API_PLAIN, &y));
    assert_ptr_equal(y, x);
    assert_false(ca_malloc_hit(tc, 0, MiB, NULL, CA_API_PLAIN, &y)); /* taken once */
    st = stats(f);
    assert_int_equal(st.allocated_bytes, MiB);
    assert_int_equal(st.cache_hits, 1);
    assert_int_equal(st.alloc_calls, 2);
    must_free(f, x, NULL, CA_API_PLAIN);
    assert_balanced(f);
}

/* The hit path keeps a free only as a block of the caller's device, and only once. */
static void test_free_refused(void **state)
{
    fixture *f = *state;
    ca_tcache *tc = ca_tc_thread_cache(f->a);
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_false(ca_free_hit(tc, x, NULL, CA_API_PLAIN, 1));   /* not the caller's device */
    assert_false(ca_free_hit(tc, x, S1, CA_API_ASYNC, 0));     /* not its API */
    assert_false(ca_free_hit(tc, x + 512, NULL, CA_API_PLAIN, 0)); /* interior */
    assert_true(ca_free_hit(tc, x, NULL, CA_API_PLAIN, 0));
    assert_false(ca_free_hit(tc, x, NULL, CA_API_PLAIN, 0));   /* freed already */
    assert_int_equal(ca_free(f->a, x, NULL, CA_API_PLAIN, NULL), CA_ERR_INVALID);
    assert_balanced(f);
}

static void *free_elsewhere(void *arg)
{
    void **job = arg;
    fixture *f = job[0];
    assert_int_equal(ca_free(f->a, job[1], NULL, CA_API_PLAIN, NULL), CA_OK);
    return NULL;
}

/* A block another thread freed (and the pools may hand out again) is never kept by the thread
 * that was handed it: its generation moved on. */
static void test_freed_elsewhere_not_kept(void **state)
{
    fixture *f = *state;
    ca_tcache *tc = ca_tc_thread_cache(f->a);
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    void *job[2] = {f, x};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, free_elsewhere, job), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_false(ca_free_hit(tc, x, NULL, CA_API_PLAIN, 0));
    assert_int_equal(stats(f).allocated_bytes, 0);
    assert_balanced(f);
}

/* Room for 8 kept blocks: the hit path keeps 8, and the ninth free is ca_free's, which pushes
 * out the oldest. The hit path takes the newest only. */
static void test_room_and_newest(void **state)
{
    fixture *f = *state;
    ca_tcache *tc = ca_tc_thread_cache(f->a);
    char *b[CA_TC_KEPT + 1];
    for (int i = 0; i <= CA_TC_KEPT; i++)
        b[i] = must_alloc(f, (size_t)(i + 1) * 64 * KiB, NULL, CA_API_PLAIN);
    for (int i = 0; i < CA_TC_KEPT; i++)
        assert_true(ca_free_hit(tc, b[i], NULL, CA_API_PLAIN, 0));
    assert_false(ca_free_hit(tc, b[CA_TC_KEPT], NULL, CA_API_PLAIN, 0));
    must_free(f, b[CA_TC_KEPT], NULL, CA_API_PLAIN); /* kept; b[0] goes to the pools */
    void *y = NULL;
    assert_false(ca_malloc_hit(tc, 0, 64 * KiB, NULL, CA_API_PLAIN, &y)); /* b[0]: gone */
    assert_false(ca_malloc_hit(tc, 0, 2 * 64 * KiB, NULL, CA_API_PLAIN, &y)); /* not newest */
    size_t newest = (size_t)(CA_TC_KEPT + 1) * 64 * KiB;
    assert_true(ca_malloc_hit(tc, 0, newest, NULL, CA_API_PLAIN, &y));
    assert_ptr_equal(y, b[CA_TC_KEPT]);
    /* ca_malloc finds an older one. */
    assert_ptr_equal(must_alloc(f, 2 * 64 * KiB, NULL, CA_API_PLAIN), b[1]);
    must_free(f, b[1], NULL, CA_API_PLAIN); /* b[2] to b[7] are still kept */
    must_free(f, b[CA_TC_KEPT], NULL, CA_API_PLAIN);
    assert_balanced(f);
}

/* Once the device has a stream beside the default ones, a plain free is the fences' business
 * and a plain block kept before is not reused. */
static void test_plain_not_kept_beside_streams(void **state)
{
    fixture *f = *state;
    ca_tcache *tc = ca_tc_thread_cache(f->a);
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    char *z = must_alloc(f, 2 * MiB, NULL, CA_API_PLAIN);
    assert_true(ca_free_hit(tc, z, NULL, CA_API_PLAIN, 0));
    ca_stream_created(f->a, 0, S1, 1);
    assert_false(ca_free_hit(tc, x, NULL, CA_API_PLAIN, 0));
    void *y = NULL;
    assert_false(ca_malloc_hit(tc, 0, 2 * MiB, NULL, CA_API_PLAIN, &y));
    must_free(f, x, NULL, CA_API_PLAIN);
    fake_complete_all(&f->dev);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        FX_TCACHE_TEST(test_keep_and_take),
        FX_TCACHE_TEST(test_free_refused),
        FX_TCACHE_TEST(test_freed_elsewhere_not_kept),
        FX_TCACHE_TEST(test_room_and_newest),
        FX_TCACHE_TEST(test_plain_not_kept_beside_streams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
