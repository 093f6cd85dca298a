/* Blocks of 64 KiB or more start on a 64 KiB boundary (ca_config.big_align), wherever the free
 * block that serves them begins; the bytes skipped in front stay a free, reusable block, and
 * the accounting stays exact. Smaller blocks keep the 512-byte granularity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "arena.h"
#include "fake_backend.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define ALIGN (64 * KiB)

static fake_device dev;
static ca_backend be;
static ca_arena *A;

static void start(size_t align, int expandable)
{
    fake_init(&dev, &be, 512 * MiB);
    ca_config cfg = {.pool = CA_POOL_SPLIT, .reuse = CA_REUSE_SAFE, .release_threshold = UINT64_MAX,
                     .max_split = UINT64_MAX, .quiet = 1, .big_align = align,
                     .expandable = expandable};
    A = ca_arena_create(&be, &cfg);
}

static void stop(void)
{
    fake_complete_all(&dev);
    ca_arena_destroy(A);
}

static uintptr_t must(size_t n)
{
    void *p = NULL;
    assert_int_equal(ca_malloc(A, 0, n, NULL, CA_API_PLAIN, &p), CA_OK);
    return (uintptr_t)p;
}

static void balanced(void)
{
    ca_dev_stats st;
    assert_true(ca_get_stats(A, 0, &st));
    assert_int_equal(st.reserved_bytes, st.allocated_bytes + st.cached_bytes + st.pending_bytes);
}

/* Small blocks in front push every larger block off the boundary of its segment. */
static void check_mix(void)
{
    uintptr_t live[64];
    int n = 0;
    for (int round = 0; round < 8; round++) {
        live[n++] = must(512 * (size_t)(round + 1));       /* small, anywhere */
        uintptr_t big = must(ALIGN + 512 * (size_t)round); /* 64 KiB or more */
        assert_int_equal(big % ALIGN, 0);
        live[n++] = big;
        uintptr_t mid = must(300 * KiB + 512);
        assert_int_equal(mid % ALIGN, 0);
        live[n++] = mid;
        balanced();
    }
    /* Freed and served again, from pieces that start anywhere. */
    for (int i = 0; i < n; i += 2)
        assert_int_equal(ca_free(A, (void *)live[i], NULL, CA_API_PLAIN, NULL), CA_OK);
    for (int i = 0; i < 8; i++)
        assert_int_equal(must(70 * KiB) % ALIGN, 0);
    balanced();
}

static void test_big_blocks_start_aligned(void **state)
{
    (void)state;
    start(ALIGN, 0);
    check_mix();
    stop();
}

static void test_expandable_blocks_start_aligned(void **state)
{
    (void)state;
    start(ALIGN, 1);
    check_mix();
    stop();
}

/* Without the setting (unit tests' default) nothing moves: a block follows its neighbour. */
static void test_no_alignment_when_unset(void **state)
{
    (void)state;
    start(0, 0);
    uintptr_t a = must(512);
    uintptr_t b = must(ALIGN);
    assert_int_equal(b, a + 512);
    stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_big_blocks_start_aligned),
        cmocka_unit_test(test_expandable_blocks_start_aligned),
        cmocka_unit_test(test_no_alignment_when_unset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
