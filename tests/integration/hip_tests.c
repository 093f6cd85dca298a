/* What ROCm's own tests (hip-tests) check of hipFree, hipMalloc and the address queries, where
 * they passed plainly and failed under the cache (issue 39, run under chipStar). Each case is
 * the hip-test it names, on the simulated HIP runtime, run plainly and under the cache: the
 * same outcome both ways.
 *
 *   hip_tests CASE     CASE: a cmocka test name below (a filter: "*" runs them all)
 *
 * The device's work is a host function that sleeps on the null stream, since the simulator runs
 * no kernels: hipFree must not return before it is done (hip_runtime_api.h: hipFree "performs
 * an implicit hipDeviceSynchronize() call"). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "gpu.h"

#define KiB ((size_t)1 << 10)
#define WORK_MS 100 /* the device's work queued before a free: long enough to be seen */

/* Unit_hipFreeImplicitSyncDev: work queued on the null stream, a block freed, and the null
 * stream idle when hipFree returns. */
static void free_implicit_sync_dev(void **state)
{
    (void)state;
    void *p = NULL;
    assert_int_equal(hipMalloc(&p, 50 * sizeof(float)), hipSuccess);
    assert_int_equal(gpu_host_sleep(NULL, WORK_MS), hipSuccess);
    assert_int_equal(hipMemsetAsync(p, 7, 50 * sizeof(float), NULL), hipSuccess);
    assert_int_equal(hipFree(p), hipSuccess);
    assert_int_equal(hipStreamQuery(NULL), hipSuccess);
}

/* Unit_hipFreeMultiTDev<char, int, float2, float4>: blocks of 50 elements of each type, work
 * queued on the null stream, then a thread a block frees it and asks the null stream, which
 * must be idle. Results go back to the main thread, where cmocka's checks run. */
enum { THREADS = 8 };
typedef struct freer {
    pthread_t thread;
    void *p;
    hipError_t freed, queried;
} freer;

static void *free_and_query(void *arg)
{
    freer *f = arg;
    f->freed = hipFree(f->p);
    f->queried = hipStreamQuery(NULL);
    return NULL;
}

static void free_multi_thread_dev(void **state)
{
    (void)state;
    static const size_t elem[] = {1, 4, 8, 16}; /* char, int, float2, float4 */
    for (size_t t = 0; t < sizeof elem / sizeof *elem; t++) {
        freer f[THREADS];
        for (int i = 0; i < THREADS; i++) {
            f[i] = (freer){0};
            assert_int_equal(hipMalloc(&f[i].p, 50 * elem[t]), hipSuccess);
        }
        assert_int_equal(gpu_host_sleep(NULL, WORK_MS), hipSuccess);
        for (int i = 0; i < THREADS; i++)
            assert_int_equal(pthread_create(&f[i].thread, NULL, free_and_query, &f[i]), 0);
        int joined = 0;
        for (int i = 0; i < THREADS; i++) /* every one, before a check may end the case */
            joined += pthread_join(f[i].thread, NULL) == 0;
        assert_int_equal(joined, THREADS);
        for (int i = 0; i < THREADS; i++) {
            assert_int_equal(f[i].freed, hipSuccess);
            assert_int_equal(f[i].queried, hipSuccess);
        }
    }
}

/* Unit_hipMalloc_Positive_Alignment: hipMalloc's blocks are 256-byte aligned, whatever the
 * runtime's larger allocations (the cache's segments) are aligned to (SIMDEV_BASE_OFFSET). Two
 * rounds, the second served from what the first freed. */
static void malloc_alignment(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 10, 100, 256, 1000, 4 * KiB, 8 * KiB, 60 * KiB, 64 * KiB,
                                   100 * KiB, 300 * KiB, 1024 * KiB};
    enum { N = sizeof sizes / sizeof *sizes };
    void *p[N];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++) {
            assert_int_equal(hipMalloc(&p[i], sizes[i]), hipSuccess);
            if ((uintptr_t)p[i] % 256 != 0)
                fail_msg("hipMalloc(%zu) gave %p, not 256-byte aligned", sizes[i], p[i]);
        }
        for (int i = 0; i < N; i++)
            assert_int_equal(hipFree(p[i]), hipSuccess);
    }
}

/* Unit_hipMemGetAddressRange_Positive: the range of a block of 8 KiB, at its start and inside,
 * is the block and the size asked. Another block first, so that this one does not start what
 * holds it. */
static void mem_get_address_range(void **state)
{
    (void)state;
    void *other = NULL, *p = NULL, *base = NULL;
    size_t size = 0;
    assert_int_equal(hipMalloc(&other, 4 * KiB), hipSuccess);
    assert_int_equal(hipMalloc(&p, 8 * KiB), hipSuccess);
    assert_int_equal(hipMemGetAddressRange(&base, &size, p), hipSuccess);
    assert_ptr_equal(base, p);
    assert_int_equal(size, 8 * KiB);
    base = NULL;
    size = 0;
    assert_int_equal(hipMemGetAddressRange(&base, &size, (char *)p + 8 * KiB - 1), hipSuccess);
    assert_ptr_equal(base, p);
    assert_int_equal(size, 8 * KiB);
    assert_int_equal(hipFree(p), hipSuccess);
    assert_int_equal(hipFree(other), hipSuccess);
}

/* Unit_hipMemPtrGetInfo_Basic: the size of a block of 1 KiB is 1 KiB. */
static void mem_ptr_get_info(void **state)
{
    (void)state;
    void *other = NULL, *p = NULL;
    size_t size = 0;
    assert_int_equal(hipMalloc(&other, 4 * KiB), hipSuccess);
    assert_int_equal(hipMalloc(&p, 1 * KiB), hipSuccess);
    assert_int_equal(hipMemPtrGetInfo(p, &size), hipSuccess);
    assert_int_equal(size, 1 * KiB);
    assert_int_equal(hipFree(p), hipSuccess);
    assert_int_equal(hipFree(other), hipSuccess);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(free_implicit_sync_dev),
        cmocka_unit_test(free_multi_thread_dev),
        cmocka_unit_test(malloc_alignment),
        cmocka_unit_test(mem_get_address_range),
        cmocka_unit_test(mem_ptr_get_info),
    };
    size_t known = strcmp(argv[argc - 1], "*") == 0 && argc == 2;
    for (size_t i = 0; argc == 2 && i < sizeof tests / sizeof *tests; i++)
        known |= strcmp(argv[1], tests[i].name) == 0;
    if (!known) { /* a filter that matches nothing would pass by running nothing */
        fprintf(stderr, "usage: %s CASE (a test name, or *)\n", argv[0]);
        return 2;
    }
    (void)sim_counters(-1); /* exits 77 (skipped) where no simulated runtime answers */
    cmocka_set_test_filter(argv[1]);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
