/* Expandable segments against the fake device's virtual memory: growth by mapping pages at a
 * range's end, free pages between live blocks unmapped by the out-of-memory ladder, the reclaim
 * and the release threshold, exact accounting, and no page used while unmapped or unmapped
 * while used (the fake records both). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arena_fixture.h"
#include "arena/internal.h"

#define PAGE FAKE_PAGE

/* A 64 MiB device: a range reserves 72 MiB of addresses (the device and an eighth). */
static fixture *fx_expand(int expandable)
{
    fixture *f = fx_new(64 * MiB);
    f->cfg.expandable = expandable;
    return f;
}

static int setup(void **state)
{
    fixture *f = fx_expand(1);
    fx_start(f);
    *state = f;
    return 0;
}

/* One mapping a growth (CACHEALLOC_EXPANDABLE_PIECE larger than any growth here): what the
 * driver's whole-mapping rule means for the arena shows in the fewest pieces. */
static int setup_whole(void **state)
{
    fixture *f = fx_expand(1);
    f->cfg.expandable_piece = 1 * GiB;
    fx_start(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    ca_arena_destroy(f->a);
    /* Everything went back: segments, mappings, memory, reservations. */
    assert_int_equal(f->dev.nlive, 0);
    assert_int_equal(f->dev.mapped_bytes, 0);
    assert_int_equal(f->dev.used, 0);
    assert_int_equal(f->dev.reserves, f->dev.va_frees);
    assert_int_equal(f->dev.violations, 0);
    test_free(f);
    return 0;
}

/* reserved = allocated + cached + pending, and reserved is what is mapped (no plain segment in
 * these tests). */
static void assert_exact(fixture *f)
{
    ca_dev_stats st = stats(f);
    assert_int_equal(st.reserved_bytes, st.allocated_bytes + st.cached_bytes + st.pending_bytes);
    assert_int_equal(st.reserved_bytes, f->dev.mapped_bytes);
    assert_int_equal(f->dev.violations, 0);
}

/* Allocate, and touch the block on s as a kernel would: the fake counts a page without memory. */
static char *use_alloc(fixture *f, size_t size, ca_stream_t s, unsigned api)
{
    void *p = NULL;
    assert_int_equal(ca_malloc(f->a, 0, size, s, api, &p), CA_OK);
    assert_non_null(p);
    fake_use(&f->dev, s, p, size);
    assert_int_equal(f->dev.violations, 0);
    return p;
}

static void test_grows_by_one_mapping_per_growth(void **state)
{
    fixture *f = *state;
    char *a = use_alloc(f, 3 * MiB, NULL, CA_API_PLAIN);
    /* One reservation, one handle of two pages: the request rounded to pages, no plain
     * segment. */
    assert_int_equal(f->dev.reserves, 1);
    assert_int_equal(f->dev.allocs, 0);
    assert_int_equal(f->dev.vmm_creates, 1);
    assert_int_equal(f->dev.maps, 1);
    assert_int_equal(stats(f).reserved_bytes, 2 * PAGE);
    /* The next one takes the free 1 MiB tail and one more page, right behind the first. */
    char *b = use_alloc(f, 3 * MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(b, a + 3 * MiB);
    assert_int_equal(f->dev.vmm_creates, 2);
    assert_int_equal(stats(f).reserved_bytes, 3 * PAGE);
    assert_int_equal(stats(f).driver_alloc_calls, 2);
    assert_exact(f);
    /* Freed, they merge with the tail into one block that serves a request of all of it. */
    must_free(f, a, NULL, CA_API_PLAIN);
    must_free(f, b, NULL, CA_API_PLAIN);
    char *c = use_alloc(f, 6 * MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(c, a);
    assert_int_equal(f->dev.vmm_creates, 2);
    must_free(f, c, NULL, CA_API_PLAIN);
    assert_exact(f);
}

/* By default a growth is mapped a page a handle, with one access call for the run. */
static void test_grows_a_page_a_handle(void **state)
{
    fixture *f = *state;
    char *a = use_alloc(f, 5 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(f->dev.vmm_creates, 3);
    assert_int_equal(f->dev.maps, 3);
    assert_int_equal(stats(f).driver_alloc_calls, 3);
    assert_int_equal(stats(f).growths, 1); /* one growth: the run of three pages */
    assert_int_equal(stats(f).reserved_bytes, 3 * PAGE);
    assert_exact(f);
    must_free(f, a, NULL, CA_API_PLAIN);
}

/* The case one mapping a growth cannot serve: a long-lived small block left inside the memory
 * of a freed large one. With a page a handle every free page around it goes back. */
static void test_free_pages_beside_a_live_block_go_back(void **state)
{
    fixture *f = *state;
    char *a = use_alloc(f, 16 * MiB, NULL, CA_API_PLAIN);
    must_free(f, a, NULL, CA_API_PLAIN);
    char *b = use_alloc(f, 2 * MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(b, a);
    assert_int_equal(f->dev.vmm_creates, 8);
    fake_complete_all(&f->dev);
    assert_int_equal(ca_reclaim(f->a, 0), 14 * MiB);
    assert_int_equal(fake_mapped(&f->dev, a, 2 * MiB), 1);
    assert_int_equal(fake_mapped(&f->dev, a + 2 * MiB, 2 * MiB), 0);
    assert_int_equal(stats(f).driver_free_calls, 7);
    assert_int_equal(f->dev.violations, 0);
    assert_exact(f);
    must_free(f, b, NULL, CA_API_PLAIN);
}

/* CACHEALLOC_EXPANDABLE_PIECE=4M: pieces of two pages, the last one what is left. */
static void test_configured_piece(void **state)
{
    (void)state;
    fixture *f = fx_expand(1);
    f->cfg.expandable_piece = 3 * MiB; /* rounded up to whole pages: 4 MiB */
    fx_start(f);
    char *a = use_alloc(f, 10 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(f->dev.vmm_creates, 3); /* 4 + 4 + 2 MiB */
    must_free(f, a, NULL, CA_API_PLAIN);
    fake_complete_all(&f->dev);
    assert_int_equal(ca_reclaim(f->a, 0), 10 * MiB);
    assert_int_equal(stats(f).driver_free_calls, 3);
    assert_exact(f);
    ca_arena_destroy(f->a);
    assert_int_equal(f->dev.mapped_bytes, 0);
    test_free(f);
}

/* Where a handle is dear (20 us here, measured by the arena at its first growth) and the device
 * keeps half its memory free, a request from CA_SOLO_LEAST (4 MiB) is one solo mapping: one
 * handle for 10 MiB on a 4 GiB device. On a 64 MiB device already half full the same growth
 * stays a page a handle, so that every free page can go back there. */
static void priced_growths(uint64_t capacity, size_t first, uint64_t second_creates)
{
    fixture *f = fx_new(capacity);
    f->cfg.expandable = 1;
    f->dev.create_ns = 20000;
    fx_start(f);
    char *a = use_alloc(f, first, NULL, CA_API_PLAIN);
    assert_int_equal(f->dev.vmm_creates, first / PAGE); /* no price known yet: pages */
    char *b = use_alloc(f, 10 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(f->dev.vmm_creates, first / PAGE + second_creates);
    assert_exact(f);
    must_free(f, a, NULL, CA_API_PLAIN);
    must_free(f, b, NULL, CA_API_PLAIN);
    ca_arena_destroy(f->a);
    assert_int_equal(f->dev.mapped_bytes, 0);
    test_free(f);
}

static void test_far_from_the_edge_growths_are_solo(void **state)
{
    (void)state;
    priced_growths(4 * GiB, 10 * MiB, 1);
    priced_growths(64 * MiB, 30 * MiB, 5);
}

/* A request of CA_SOLO_MIN or more is one solo mapping: one handle, which no smaller block
 * is carved from and nothing merges into, so that it goes back whole when its block is freed. */
static void test_large_request_is_one_solo_mapping(void **state)
{
    (void)state;
    fixture *f = fx_new(1 * GiB);
    f->cfg.expandable = 1;
    fx_start(f);
    char *low = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN); /* page pieces: 2 */
    char *big = use_alloc(f, CA_SOLO_MIN + 3 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(f->dev.vmm_creates, 3);
    assert_ptr_equal(big, low + 4 * MiB);
    must_free(f, big, NULL, CA_API_PLAIN);
    must_free(f, low, NULL, CA_API_PLAIN);
    /* Neither a small request nor one spanning both free blocks is carved from the mapping. */
    char *small = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(small, low);
    char *mid = use_alloc(f, 8 * MiB, NULL, CA_API_PLAIN);
    assert_true(mid >= big + CA_SOLO_MIN + 4 * MiB || mid + 8 * MiB <= big);
    /* A request of the same size takes the mapping again, with no driver call. */
    int creates = f->dev.vmm_creates;
    char *again = use_alloc(f, CA_SOLO_MIN + 3 * MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(again, big);
    assert_int_equal(f->dev.vmm_creates, creates);
    /* Freed, it goes back whole, with one unmap, beside live blocks. */
    must_free(f, again, NULL, CA_API_PLAIN);
    fake_complete_all(&f->dev);
    assert_true(ca_reclaim(f->a, 0) >= CA_SOLO_MIN + 4 * MiB);
    assert_int_equal(fake_mapped(&f->dev, big, CA_SOLO_MIN), 0);
    assert_int_equal(fake_mapped(&f->dev, small, 4 * MiB), 1);
    assert_exact(f);
    must_free(f, small, NULL, CA_API_PLAIN);
    must_free(f, mid, NULL, CA_API_PLAIN);
    ca_arena_destroy(f->a);
    assert_int_equal(f->dev.mapped_bytes, 0);
    assert_int_equal(f->dev.violations, 0);
    test_free(f);
}

/* What another process must map to see a block: the whole mappings holding it, a block
 * spanning two growths in two. */
static void test_mapped_pieces_follow_the_mappings(void **state)
{
    fixture *f = *state;
    char *a = use_alloc(f, 3 * MiB, NULL, CA_API_PLAIN);
    char *b = use_alloc(f, 3 * MiB, NULL, CA_API_PLAIN); /* a's tail page and a new one */
    ca_piece pc[4];
    uintptr_t ua = (uintptr_t)a;
    ca_place at, bt;
    assert_int_equal(ca_locate(f->a, a, &at), 1);
    assert_int_equal(ca_locate(f->a, b + 100, &bt), 1);
    assert_true(bt.expandable && bt.live && bt.block == (uintptr_t)b && bt.size == 3 * MiB);
    assert_int_equal(ca_mapped_pieces(f->a, ua, at.size, pc, 4), 1);
    assert_true(pc[0].addr == ua && pc[0].size == 4 * MiB);
    assert_int_equal(ca_mapped_pieces(f->a, (uintptr_t)b, bt.size, pc, 4), 2);
    assert_true(pc[0].addr == ua && pc[0].size == 4 * MiB);
    assert_true(pc[1].addr == ua + 4 * MiB && pc[1].size == 2 * MiB);
    assert_int_equal(ca_mapped_pieces(f->a, (uintptr_t)b, bt.size, pc, 1), -1);
    /* Not a live block's start, not its size, or freed: nothing to map. */
    assert_int_equal(ca_mapped_pieces(f->a, (uintptr_t)b + 256, bt.size, pc, 4), 0);
    assert_int_equal(ca_mapped_pieces(f->a, (uintptr_t)b, 2 * MiB, pc, 4), 0);
    must_free(f, b, NULL, CA_API_PLAIN);
    assert_int_equal(ca_mapped_pieces(f->a, (uintptr_t)b, bt.size, pc, 4), 0);
    must_free(f, a, NULL, CA_API_PLAIN);
}

/* A mapping followed by an unmapped one ends where that one was: a block's mapping never
 * runs on into a hole the ladder or a reclaim left. */
static void test_mapped_pieces_stop_at_a_hole(void **state)
{
    fixture *f = *state;
    char *p[3];
    for (int i = 0; i < 3; i++)
        p[i] = use_alloc(f, 2 * MiB, NULL, CA_API_PLAIN);
    must_free(f, p[1], NULL, CA_API_PLAIN);
    fake_complete_all(&f->dev);
    assert_int_equal(ca_reclaim(f->a, 0), 2 * MiB);
    assert_int_equal(fake_mapped(&f->dev, p[1], 2 * MiB), 0);
    ca_place at;
    ca_piece pc[4];
    assert_int_equal(ca_locate(f->a, p[0], &at), 1);
    assert_int_equal(ca_mapped_pieces(f->a, (uintptr_t)p[0], at.size, pc, 4), 1);
    assert_true(pc[0].addr == (uintptr_t)p[0] && pc[0].size == 2 * MiB);
    assert_int_equal(ca_locate(f->a, p[2], &at), 1);
    assert_int_equal(ca_mapped_pieces(f->a, (uintptr_t)p[2], at.size, pc, 4), 1);
    assert_true(pc[0].addr == (uintptr_t)p[2] && pc[0].size == 2 * MiB);
    must_free(f, p[0], NULL, CA_API_PLAIN);
    must_free(f, p[2], NULL, CA_API_PLAIN);
}

/* The driver unmaps whole mappings only: free pages of a mapping that still holds a live block
 * stay mapped, and go with the rest of it once that block is freed. */
static void test_only_whole_mappings_are_unmapped(void **state)
{
    fixture *f = *state;
    char *a = use_alloc(f, 6 * MiB, NULL, CA_API_PLAIN);
    must_free(f, a, NULL, CA_API_PLAIN);
    char *b = use_alloc(f, 2 * MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(b, a);
    assert_int_equal(f->dev.vmm_creates, 1);
    fake_complete_all(&f->dev);
    /* 4 MiB free in whole pages, but inside the live block's mapping. */
    assert_int_equal(ca_reclaim(f->a, 0), 0);
    assert_int_equal(fake_mapped(&f->dev, a + 2 * MiB, 4 * MiB), 1);
    assert_int_equal(f->dev.violations, 0);
    must_free(f, b, NULL, CA_API_PLAIN);
    fake_complete_all(&f->dev);
    assert_int_equal(ca_reclaim(f->a, 0), 6 * MiB);
    assert_int_equal(f->dev.unmap_calls, 1);
    assert_int_equal(stats(f).driver_free_calls, 1);
    assert_int_equal(f->dev.violations, 0);
    assert_exact(f);
}

/* Blocks that each grew the range, every other one freed (the scattered-free case of
 * docs/arena.md): their mappings go back whole, and a request of all that room is served. */
static void test_scattered_frees_give_their_mappings_back(void **state)
{
    fixture *f = *state;
    enum { N = 8 };
    char *p[N];
    for (int i = 0; i < N; i++)
        p[i] = use_alloc(f, 2 * MiB, NULL, CA_API_PLAIN);
    for (int i = 0; i < N; i += 2)
        must_free(f, p[i], NULL, CA_API_PLAIN);
    fake_complete_all(&f->dev);
    /* Room for the request only once the freed mappings are unmapped. */
    f->dev.capacity = f->dev.used + 2 * MiB;
    void *big = NULL;
    assert_int_equal(ca_malloc(f->a, 0, 8 * MiB, NULL, CA_API_PLAIN, &big), CA_OK);
    assert_int_equal(f->dev.violations, 0);
    must_free(f, big, NULL, CA_API_PLAIN);
    for (int i = 1; i < N; i += 2)
        must_free(f, p[i], NULL, CA_API_PLAIN);
    assert_exact(f);
}

static void test_small_and_large_blocks_get_their_own_range(void **state)
{
    fixture *f = *state;
    char *s = use_alloc(f, 4 * KiB, NULL, CA_API_PLAIN);
    char *l = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(f->dev.reserves, 2);
    assert_int_equal(stats(f).reserved_bytes, 3 * PAGE);
    must_free(f, s, NULL, CA_API_PLAIN);
    must_free(f, l, NULL, CA_API_PLAIN);
    assert_exact(f);
}

/* 16 blocks of 4 MiB fill the device; every other one is freed: 32 MiB free in pieces of
 * 4 MiB, and an 8 MiB request fits none. */
static void fill_and_punch(fixture *f, char **blocks)
{
    for (int i = 0; i < 16; i++)
        blocks[i] = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    for (int i = 0; i < 16; i += 2)
        must_free(f, blocks[i], NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).largest_free_block, 4 * MiB);
}

static void test_ladder_unmaps_free_pages_between_live_blocks(void **state)
{
    fixture *f = *state;
    char *blocks[16];
    fill_and_punch(f, blocks);
    assert_int_equal(f->dev.used, 64 * MiB);
    char *big = use_alloc(f, 8 * MiB, NULL, CA_API_PLAIN);
    /* The holes' pages went back and four new ones were mapped at the range's end. */
    assert_int_equal(f->dev.unmaps, 16);
    assert_int_equal(stats(f).reserved_bytes, 8 * 4 * MiB + 8 * MiB);
    assert_int_equal(stats(f).oom_recoveries, 1);
    for (int i = 1; i < 16; i += 2)
        assert_int_equal(fake_mapped(&f->dev, blocks[i], 4 * MiB), 1);
    assert_exact(f);
    must_free(f, big, NULL, CA_API_PLAIN);
    for (int i = 1; i < 16; i += 2)
        must_free(f, blocks[i], NULL, CA_API_PLAIN);
    assert_exact(f);
}

/* A range with no hole that fits (live blocks spread over it, 4 MiB holes and an 8 MiB tail)
 * opens another range for a 24 MiB request, rather than a plain segment that could never give
 * its pages back; its pages go back like any range's. */
static void test_full_range_opens_another(void **state)
{
    fixture *f = *state;
    char *blocks[16];
    fill_and_punch(f, blocks);
    char *big = use_alloc(f, 24 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(f->dev.reserves, 2);
    assert_int_equal(f->dev.allocs, 0);
    assert_int_equal(stats(f).reserved_bytes, 8 * 4 * MiB + 24 * MiB);
    assert_exact(f);
    must_free(f, big, NULL, CA_API_PLAIN);
    assert_true(ca_reclaim(f->a, 0) >= 24 * MiB);
    assert_int_equal(fake_mapped(&f->dev, big, PAGE), 0);
    /* And it serves again, from the lowest fitting hole of either range. */
    big = use_alloc(f, 24 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(f->dev.reserves, 2);
    assert_int_equal(f->dev.allocs, 0);
    must_free(f, big, NULL, CA_API_PLAIN);
    for (int i = 1; i < 16; i += 2)
        must_free(f, blocks[i], NULL, CA_API_PLAIN);
    assert_exact(f);
}

/* A request larger than the device fails each time without leaving a reservation behind. */
static void test_oversized_request_opens_no_range(void **state)
{
    fixture *f = *state;
    char *a = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    int reserves = f->dev.reserves;
    for (int i = 0; i < 3; i++) {
        void *p = NULL;
        assert_int_equal(ca_malloc(f->a, 0, 100 * MiB, NULL, CA_API_PLAIN, &p), CA_ERR_OOM);
    }
    assert_int_equal(f->dev.reserves, reserves);
    must_free(f, a, NULL, CA_API_PLAIN);
    assert_exact(f);
}

/* The same traffic over plain segments: the cache holds 32 MiB and cannot serve 8. */
static void test_plain_segments_fail_the_same_request(void **state)
{
    (void)state;
    fixture *f = fx_expand(0);
    fx_start(f);
    char *blocks[16];
    for (int i = 0; i < 16; i++)
        blocks[i] = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    for (int i = 0; i < 16; i += 2)
        must_free(f, blocks[i], NULL, CA_API_PLAIN);
    void *p = NULL;
    assert_int_equal(ca_malloc(f->a, 0, 8 * MiB, NULL, CA_API_PLAIN, &p), CA_ERR_OOM);
    assert_true(stats(f).cached_bytes >= 32 * MiB);
    for (int i = 1; i < 16; i += 2)
        must_free(f, blocks[i], NULL, CA_API_PLAIN);
    ca_arena_destroy(f->a);
    assert_int_equal(f->dev.nlive, 0);
    test_free(f);
}

static void test_unmapping_waits_for_work_on_the_pages(void **state)
{
    fixture *f = *state;
    char *a = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    char *b = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    /* Single-stream mode: a is free at once, while its work still runs. */
    fake_use(&f->dev, CA_STREAM_LEGACY, a, 4 * MiB);
    must_free(f, a, NULL, CA_API_PLAIN);
    uint64_t syncs = f->dev.device_syncs;
    assert_int_equal(ca_reclaim(f->a, 0), 4 * MiB);
    /* The device was waited for before a's pages went. */
    assert_int_equal(f->dev.device_syncs, syncs + 1);
    assert_int_equal(f->dev.unmaps, 2);
    must_free(f, b, NULL, CA_API_PLAIN);
    assert_exact(f);
}

/* The fake itself sees a page unmapped under running work: the test above can fail. */
static void test_fake_sees_an_unmap_under_work(void **state)
{
    fixture *f = *state;
    char *a = use_alloc(f, 2 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(f->be.vmm_unmap(f->be.ctx, 0, a, PAGE), CA_OK);
    assert_int_equal(f->dev.violations, 1);
    f->dev.violations = 0;
    fake_use(&f->dev, NULL, a, 16);
    assert_int_equal(f->dev.violations, 1);
    /* Put the page back so that the arena's own teardown finds what it mapped. */
    uint64_t h;
    assert_int_equal(f->be.vmm_create(f->be.ctx, 0, PAGE, &h), CA_OK);
    assert_int_equal(f->be.vmm_map(f->be.ctx, 0, a, PAGE, h), CA_OK);
    assert_int_equal(f->be.vmm_release(f->be.ctx, 0, h), CA_OK);
    assert_int_equal(f->be.vmm_set_access(f->be.ctx, 0, a, PAGE), CA_OK);
    f->dev.violations = 0;
    fake_complete_all(&f->dev);
    must_free(f, a, NULL, CA_API_PLAIN);
}

static void test_reclaim_unmaps_a_hole_and_growth_refills_it(void **state)
{
    fixture *f = *state;
    char *a = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    char *b = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    char *c = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    must_free(f, b, NULL, CA_API_PLAIN);
    fake_complete_all(&f->dev);
    assert_int_equal(ca_reclaim(f->a, 0), 4 * MiB);
    assert_int_equal(fake_mapped(&f->dev, b, 4 * MiB), 0);
    assert_int_equal(fake_mapped(&f->dev, a, 4 * MiB), 1);
    assert_int_equal(fake_mapped(&f->dev, c, 4 * MiB), 1);
    assert_int_equal(stats(f).reserved_bytes, 8 * MiB);
    assert_int_equal(stats(f).driver_free_calls, 1); /* b's one mapping */
    assert_exact(f);
    /* Growth fills the lowest hole first: the range stays compact. */
    char *d = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(d, b);
    assert_int_equal(f->dev.reserves, 1);
    must_free(f, a, NULL, CA_API_PLAIN);
    must_free(f, c, NULL, CA_API_PLAIN);
    must_free(f, d, NULL, CA_API_PLAIN);
    assert_exact(f);
}

/* Only whole pages go: a hole that does not cover a page keeps its memory. */
static void test_partial_pages_stay_mapped(void **state)
{
    fixture *f = *state;
    char *a = use_alloc(f, 3 * MiB, NULL, CA_API_PLAIN);
    char *b = use_alloc(f, 2 * MiB, NULL, CA_API_PLAIN);
    char *c = use_alloc(f, 3 * MiB, NULL, CA_API_PLAIN);
    must_free(f, b, NULL, CA_API_PLAIN);
    fake_complete_all(&f->dev);
    /* b, [3 MiB, 5 MiB), straddles pages 1 and 2, which a and c keep. */
    assert_int_equal(ca_reclaim(f->a, 0), 0);
    assert_int_equal(stats(f).reserved_bytes, 4 * PAGE);
    must_free(f, a, NULL, CA_API_PLAIN);
    must_free(f, c, NULL, CA_API_PLAIN);
    assert_int_equal(ca_reclaim(f->a, 0), 4 * PAGE);
    assert_int_equal(stats(f).reserved_bytes, 0);
    assert_exact(f);
}

static void test_threshold_unmaps_pages_the_sync_proved_idle(void **state)
{
    (void)state;
    fixture *f = fx_expand(1);
    f->cfg.release_threshold = 0;
    fx_start(f);
    char *a = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    char *b = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    char *x = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    char *c = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    must_free(f, b, NULL, CA_API_PLAIN);
    uint64_t t = ca_device_sync_begin(f->a, 0);
    /* Freed while the program synchronized: that synchronization does not cover it. */
    fake_use(&f->dev, CA_STREAM_LEGACY, c, 4 * MiB);
    must_free(f, c, NULL, CA_API_PLAIN);
    fake_complete(&f->dev, CA_STREAM_LEGACY);
    uint64_t syncs = f->dev.device_syncs;
    fake_use(&f->dev, CA_STREAM_LEGACY, a, 4 * MiB); /* running on, past the sync */
    ca_device_synchronized(f->a, 0, t);
    /* b's pages went back; c's stayed (its free is not covered), and the trim never waits. */
    assert_int_equal(f->dev.device_syncs, syncs);
    assert_int_equal(fake_mapped(&f->dev, b, 4 * MiB), 0);
    assert_int_equal(fake_mapped(&f->dev, c, 4 * MiB), 1);
    assert_int_equal(stats(f).cached_bytes, 4 * MiB);
    assert_exact(f);
    /* The next synchronization covers c. */
    fake_complete_all(&f->dev);
    t = ca_device_sync_begin(f->a, 0);
    ca_device_synchronized(f->a, 0, t);
    assert_int_equal(fake_mapped(&f->dev, c, 4 * MiB), 0);
    assert_int_equal(stats(f).cached_bytes, 0);
    must_free(f, a, NULL, CA_API_PLAIN);
    must_free(f, x, NULL, CA_API_PLAIN);
    assert_exact(f);
    teardown((void **)&f);
}

static void test_without_vmm_calls_segments_stay_plain(void **state)
{
    (void)state;
    fixture *f = fx_expand(1);
    f->be.vmm_create = NULL;
    fx_start(f);
    char *a = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(f->dev.allocs, 1);
    assert_int_equal(f->dev.reserves, 0);
    must_free(f, a, NULL, CA_API_PLAIN);
    teardown((void **)&f);
}

static void test_failed_creation_maps_nothing_and_recovers(void **state)
{
    fixture *f = *state;
    /* The growth's one handle fails: nothing is mapped, and the ladder tries again. */
    f->dev.fail_create_at = 1;
    void *p = NULL;
    assert_int_equal(ca_malloc(f->a, 0, 5 * MiB, NULL, CA_API_PLAIN, &p), CA_OK);
    /* The ladder tried again and the program sees nothing of it. */
    assert_int_equal(stats(f).oom_recoveries, 1);
    assert_int_equal(f->dev.clears, 1);
    assert_int_equal(stats(f).reserved_bytes, 3 * PAGE);
    assert_exact(f);
    must_free(f, p, NULL, CA_API_PLAIN);
}

static void test_reset_gives_mappings_and_reservations_back(void **state)
{
    fixture *f = *state;
    use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    use_alloc(f, 4 * KiB, NULL, CA_API_PLAIN);
    ca_device_resetting(f->a, 0);
    assert_int_equal(f->dev.mapped_bytes, 0);
    assert_int_equal(f->dev.used, 0);
    assert_int_equal(f->dev.va_frees, 2);
    ca_device_reset(f->a, 0);
    assert_int_equal(stats(f).reserved_bytes, 0);
    /* The device serves again, from a new range. */
    char *a = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(f->dev.reserves, 3);
    must_free(f, a, NULL, CA_API_PLAIN);
}

static void test_dead_stream_range_is_taken_over(void **state)
{
    fixture *f = *state;
    ca_stream_created(f->a, 0, S1, 1);
    char *a = use_alloc(f, 4 * MiB, S1, CA_API_ASYNC);
    must_free(f, a, S1, CA_API_ASYNC);
    ca_stream_destroyed(f->a, 0, S1);
    fake_complete_all(&f->dev);
    ca_stream_created(f->a, 0, S2, 1);
    char *b = use_alloc(f, 4 * MiB, S2, CA_API_ASYNC);
    /* S2 got S1's range and its mapped pages: no new reservation, no new mapping. */
    assert_int_equal(f->dev.reserves, 1);
    assert_int_equal(f->dev.vmm_creates, 1);
    assert_ptr_equal(b, a);
    must_free(f, b, S2, CA_API_ASYNC);
    ca_stream_destroyed(f->a, 0, S2);
    fake_complete_all(&f->dev);
    /* A dead stream's range with nothing mapped goes back whole. */
    ca_reclaim(f->a, 0);
    assert_int_equal(f->dev.va_frees, 1);
    assert_int_equal(stats(f).segments, 0);
    assert_exact(f);
}

/* The program's peer access reaches the arena's mapped memory: what is mapped when it is
 * given, what later growths map, and it goes again when taken away. */
static void test_peer_access_reaches_every_mapping(void **state)
{
    fixture *f = *state;
    char *a = use_alloc(f, 4 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(fake_peer_reaches(&f->dev, a, 4 * MiB, 1), 0);
    assert_int_equal(ca_peer_access(f->a, 0, 1, true), CA_OK);
    assert_int_equal(fake_peer_reaches(&f->dev, a, 4 * MiB, 1), 1);
    char *b = use_alloc(f, 8 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(fake_peer_reaches(&f->dev, b, 8 * MiB, 1), 1);
    assert_int_equal(fake_peer_reaches(&f->dev, b, 8 * MiB, 2), 0);
    assert_int_equal(ca_peer_access(f->a, 0, 1, false), CA_OK);
    assert_int_equal(fake_peer_reaches(&f->dev, a, 4 * MiB, 1), 0);
    assert_int_equal(fake_peer_reaches(&f->dev, b, 8 * MiB, 1), 0);
    char *c = use_alloc(f, 16 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(fake_peer_reaches(&f->dev, c, 16 * MiB, 1), 0);
    must_free(f, a, NULL, CA_API_PLAIN);
    must_free(f, b, NULL, CA_API_PLAIN);
    must_free(f, c, NULL, CA_API_PLAIN);
    assert_exact(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_grows_by_one_mapping_per_growth, setup_whole,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_grows_a_page_a_handle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_pages_beside_a_live_block_go_back, setup,
                                        teardown),
        cmocka_unit_test(test_configured_piece),
        cmocka_unit_test(test_far_from_the_edge_growths_are_solo),
        cmocka_unit_test(test_large_request_is_one_solo_mapping),
        cmocka_unit_test_setup_teardown(test_only_whole_mappings_are_unmapped, setup_whole, teardown),
        cmocka_unit_test_setup_teardown(test_mapped_pieces_follow_the_mappings, setup_whole, teardown),
        cmocka_unit_test_setup_teardown(test_mapped_pieces_stop_at_a_hole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scattered_frees_give_their_mappings_back, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_small_and_large_blocks_get_their_own_range, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_ladder_unmaps_free_pages_between_live_blocks, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_full_range_opens_another, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oversized_request_opens_no_range, setup, teardown),
        cmocka_unit_test(test_plain_segments_fail_the_same_request),
        cmocka_unit_test_setup_teardown(test_unmapping_waits_for_work_on_the_pages, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_fake_sees_an_unmap_under_work, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reclaim_unmaps_a_hole_and_growth_refills_it, setup_whole,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_partial_pages_stay_mapped, setup, teardown),
        cmocka_unit_test(test_threshold_unmaps_pages_the_sync_proved_idle),
        cmocka_unit_test(test_without_vmm_calls_segments_stay_plain),
        cmocka_unit_test_setup_teardown(test_failed_creation_maps_nothing_and_recovers, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_reset_gives_mappings_and_reservations_back, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_dead_stream_range_is_taken_over, setup_whole, teardown),
        cmocka_unit_test_setup_teardown(test_peer_access_reaches_every_mapping, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
