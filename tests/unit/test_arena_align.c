/* Blocks of 64 KiB or more start on a 64 KiB boundary (ca_config.big_align), wherever the free
 * block that serves them begins; the bytes skipped in front stay a free, reusable block, and
 * the accounting stays exact. Smaller blocks keep the 512-byte granularity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "arena/arena.h"
#include "fake_backend.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define ALIGN (64 * KiB)

static fake_device dev;
static ca_backend be;
static ca_arena *A;

static void start_with(ca_pool_kind pool, size_t align, int expandable, size_t base_offset)
{
    fake_init(&dev, &be, 512 * MiB);
    dev.base_offset = base_offset;
    ca_config cfg = {.pool = pool, .reuse = CA_REUSE_SAFE, .release_threshold = UINT64_MAX,
                     .max_split = UINT64_MAX, .quiet = 1, .big_align = align,
                     .expandable = expandable};
    A = ca_arena_create(&be, &cfg);
}

static void start(size_t align, int expandable)
{
    start_with(CA_POOL_SPLIT, align, expandable, 0);
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

/* A runtime whose bases are aligned to 128 bytes only (chipStar's and ROCm's segments): every
 * block still starts on 512 bytes (a block inherits its segment's offset otherwise), large
 * ones on 64 KiB, and the driver gets back exactly the pointers it gave. */
#define OFFSET 128

static void all_back(void)
{
    fake_complete_all(&dev);
    ca_reclaim(A, -1);
    assert_int_equal(dev.nlive, 0);          /* each released by the driver's own base */
    assert_int_equal(dev.releases, dev.allocs);
}

static void test_unaligned_bases_split(void **state)
{
    (void)state;
    start_with(CA_POOL_SPLIT, ALIGN, 0, OFFSET);
    static const size_t sizes[] = {1, 10, 256, 1000, 4096, 8 * KiB, 60 * KiB};
    uintptr_t live[64];
    int n = 0;
    for (int round = 0; round < 3; round++)
        for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
            live[n] = must(sizes[i]);
            assert_int_equal(live[n] % 512, 0);
            n++;
        }
    uintptr_t big = must(300 * KiB);
    assert_int_equal(big % ALIGN, 0);
    balanced();
    /* The bytes of the driver's allocation in front of the first block are inside the
     * segment: freeing them is refused, never passed to the runtime's free. */
    ca_place at;
    assert_true(ca_locate(A, (void *)live[0], &at));
    assert_int_equal(at.seg_base % 512, OFFSET);
    assert_true(at.block >= at.seg_base && at.block - at.seg_base < 512);
    assert_int_equal(ca_free(A, (void *)at.seg_base, NULL, CA_API_PLAIN, NULL), CA_ERR_INVALID);
    for (int i = 0; i < n; i++)
        assert_int_equal(ca_free(A, (void *)live[i], NULL, CA_API_PLAIN, NULL), CA_OK);
    assert_int_equal(ca_free(A, (void *)big, NULL, CA_API_PLAIN, NULL), CA_OK);
    ca_arena_check(A);
    all_back();
    stop();
}

/* A segment that must hold its request whole (a large request's own segment): the first one
 * is too short once its base is skipped, goes back and is asked again with room; later ones
 * are asked with room at once. */
static void test_unaligned_bases_exact_segments(void **state)
{
    (void)state;
    start_with(CA_POOL_SPLIT, ALIGN, 0, OFFSET);
    uintptr_t a = must(12 * MiB);
    assert_int_equal(a % ALIGN, 0);
    assert_int_equal(dev.allocs, 2);
    assert_int_equal(dev.releases, 1);
    uintptr_t b = must(14 * MiB);
    assert_int_equal(b % ALIGN, 0);
    assert_int_equal(dev.allocs, 3);
    balanced();
    ca_arena_check(A);
    assert_int_equal(ca_free(A, (void *)a, NULL, CA_API_PLAIN, NULL), CA_OK);
    assert_int_equal(ca_free(A, (void *)b, NULL, CA_API_PLAIN, NULL), CA_OK);
    all_back();
    stop();
}

/* Binned blocks are each all of a segment, reused only at their exact size: they still are, and
 * start on 512 bytes (a binned block starts where its segment does: the large alignment is
 * the driver's). */
static void test_unaligned_bases_binned(void **state)
{
    (void)state;
    start_with(CA_POOL_BINNED, ALIGN, 0, OFFSET);
    for (int round = 0; round < 3; round++) {
        uintptr_t s = must(1000), m = must(128 * KiB), l = must(4 * MiB);
        assert_int_equal(s % 512, 0);
        assert_int_equal(m % 512, 0);
        assert_int_equal(l % 512, 0);
        balanced();
        assert_int_equal(ca_free(A, (void *)s, NULL, CA_API_PLAIN, NULL), CA_OK);
        assert_int_equal(ca_free(A, (void *)m, NULL, CA_API_PLAIN, NULL), CA_OK);
        assert_int_equal(ca_free(A, (void *)l, NULL, CA_API_PLAIN, NULL), CA_OK);
    }
    /* Three segments, and the first try of the first, too short: the others were asked with
     * room at once, and every round after the first reused them. */
    assert_int_equal(dev.allocs, 4);
    ca_arena_check(A);
    all_back();
    stop();
}

/* Uncached: a segment an allocation, each on 512 bytes (its segment's one block, which starts
 * where the segment does), each back to the driver at its free. */
static void test_unaligned_bases_uncached(void **state)
{
    (void)state;
    start_with(CA_POOL_NONE, ALIGN, 0, OFFSET);
    for (int i = 0; i < 4; i++) {
        uintptr_t p = must(1000 + (size_t)i * 100 * KiB);
        assert_int_equal(p % 512, 0);
        assert_int_equal(ca_free(A, (void *)p, NULL, CA_API_PLAIN, NULL), CA_OK);
    }
    assert_int_equal(dev.nlive, 0);
    stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_big_blocks_start_aligned),
        cmocka_unit_test(test_expandable_blocks_start_aligned),
        cmocka_unit_test(test_no_alignment_when_unset),
        cmocka_unit_test(test_unaligned_bases_split),
        cmocka_unit_test(test_unaligned_bases_exact_segments),
        cmocka_unit_test(test_unaligned_bases_binned),
        cmocka_unit_test(test_unaligned_bases_uncached),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
