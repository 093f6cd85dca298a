/* The free figure (ca_free_for_program, what cudaMemGetInfo reports under the cache): a request
 * of exactly that much is served, one 512 bytes larger is refused where the figure is exact;
 * free memory in holes no single request can get is not counted, pending and thread-kept
 * blocks are, right after their free; CACHEALLOC_LIMIT caps what a growth can add. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arena_fixture.h"

/* What the fake driver reports free. */
static uint64_t driver_free(fixture *f) { return f->dev.capacity - f->dev.used; }

/* The figure cudaMemGetInfo reports for device 0 now. */
static uint64_t figure(fixture *f)
{
    return ca_free_for_program(f->a, 0, driver_free(f), f->dev.capacity);
}

static fixture *start(uint64_t capacity, int expandable)
{
    fixture *f = fx_new(capacity);
    f->cfg.expandable = expandable;
    fx_start(f);
    return f;
}

/* A request of the figure is served (and freed again); with exact, one of 512 bytes more is
 * refused first. */
static void assert_served(fixture *f, uint64_t fig, bool exact)
{
    void *p = NULL;
    if (exact)
        assert_int_equal(ca_malloc(f->a, 0, fig + 512, NULL, CA_API_PLAIN, &p), CA_ERR_OOM);
    p = must_alloc(f, fig, NULL, CA_API_PLAIN);
    must_free(f, p, NULL, CA_API_PLAIN);
}

/* 60 blocks of 7 MiB, then every other one freed (JAX's and TensorFlow's sizing after some
 * work): blocks[] keeps the live ones, NULL for the freed. */
static void scatter(fixture *f, void **blocks)
{
    for (int i = 0; i < 60; i++)
        blocks[i] = must_alloc(f, 7 * MiB, NULL, CA_API_PLAIN);
    for (int i = 1; i < 60; i += 2) {
        must_free(f, blocks[i], NULL, CA_API_PLAIN);
        blocks[i] = NULL;
    }
}

static void free_all(fixture *f, void **blocks, int n)
{
    for (int i = 0; i < n; i++)
        if (blocks[i])
            must_free(f, blocks[i], NULL, CA_API_PLAIN);
}

/* Plain segments: two 7 MiB blocks share each 20 MiB segment, so every freed block leaves a
 * 13 MiB hole beside a live one that no request larger than that can get. Only a segment
 * freed whole goes back to the driver (the first, once block 0 goes too). */
static void test_plain_segments_count_whole_segments_only(void **state)
{
    (void)state;
    fixture *f = start(GiB, 0);
    void *blocks[60];
    scatter(f, blocks);
    must_free(f, blocks[0], NULL, CA_API_PLAIN);
    blocks[0] = NULL;
    ca_dev_stats st = stats(f);
    assert_int_equal(st.cached_bytes, 20 * MiB + 29 * 13 * MiB);
    uint64_t fig = figure(f);
    assert_int_equal(fig, driver_free(f) + 20 * MiB);
    assert_served(f, fig, true);
    free_all(f, blocks, 60);
    fx_finish(f);
}

/* An expandable range, one mapping per growth or smaller pieces: a freed block gives back the
 * mappings wholly inside it; its part in a mapping that still holds a live block stays, and
 * counts only where it lies below the range's free end, which a growth extends. */
static void test_expandable_counts_whole_mappings_only(void **state)
{
    (void)state;
    fixture *f = start(64 * MiB, 1);
    char *a = must_alloc(f, 3 * MiB, NULL, CA_API_PLAIN); /* pages 0, 1 */
    char *b = must_alloc(f, 3 * MiB, NULL, CA_API_PLAIN); /* a's page 1, page 2 */
    char *c = must_alloc(f, 3 * MiB, NULL, CA_API_PLAIN); /* pages 3, 4: 1 MiB free tail */
    must_free(f, b, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).cached_bytes, 4 * MiB);
    /* b's own page goes back; its 1 MiB in a's page does not. The tail joins the growth. */
    uint64_t fig = figure(f);
    assert_int_equal(fig, driver_free(f) + FAKE_PAGE + MiB);
    assert_served(f, fig, true);
    must_free(f, a, NULL, CA_API_PLAIN);
    must_free(f, c, NULL, CA_API_PLAIN);
    fx_finish(f);
}

/* The JAX-style sizing in a range: 90% of the figure and the figure itself are served, and the
 * figure counts neither more than the driver and the free mappings give nor less than the
 * driver alone. */
static void test_expandable_scattered_frees(void **state)
{
    (void)state;
    fixture *f = start(GiB, 1);
    void *blocks[60];
    scatter(f, blocks);
    ca_dev_stats st = stats(f);
    uint64_t fig = figure(f);
    assert_true(fig > driver_free(f));
    assert_true(fig < driver_free(f) + st.cached_bytes);
    void *p = must_alloc(f, fig / 10 * 9, NULL, CA_API_PLAIN);
    must_free(f, p, NULL, CA_API_PLAIN);
    assert_served(f, figure(f), true);
    free_all(f, blocks, 60);
    fx_finish(f);
}

/* A block freed while a non-blocking stream may still use it waits for a fence: the figure
 * rises by all of it at the free, as the plain runtime's does, and a request of the figure
 * waits for the fence instead of failing. */
static void pending_counts_at_once(int expandable)
{
    fixture *f = start(GiB, expandable);
    ca_stream_created(f->a, 0, S1, 1);
    char *x = must_alloc(f, 100 * MiB, NULL, CA_API_PLAIN);
    fake_use(&f->dev, S1, x, 100 * MiB);
    uint64_t held = figure(f);
    must_free(f, x, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).pending_bytes, 100 * MiB);
    uint64_t fig = figure(f);
    assert_int_equal(fig, held + 100 * MiB);
    assert_served(f, fig, true);
    assert_int_equal(f->dev.violations, 0);
    fx_finish(f);
}

static void test_pending_counts_at_once_plain(void **state)
{
    (void)state;
    pending_counts_at_once(0);
}

static void test_pending_counts_at_once_expandable(void **state)
{
    (void)state;
    pending_counts_at_once(1);
}

/* A block a thread cache keeps is free to the program, whose next miss takes it back. */
static void test_thread_kept_blocks_count(void **state)
{
    (void)state;
    fixture *f = fx_new(GiB);
    f->cfg.thread_cache = 1;
    fx_start(f);
    char *x = must_alloc(f, 4 * MiB, NULL, CA_API_PLAIN); /* alone in a 20 MiB segment */
    must_free(f, x, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).allocated_bytes, 0); /* kept, counted as cached */
    uint64_t fig = figure(f);
    assert_int_equal(fig, driver_free(f) + 20 * MiB);
    assert_served(f, fig, true);
    fx_finish(f);
}

/* Under CACHEALLOC_LIMIT a growth may add no more than the limit leaves once the ladder gave
 * back what it can: the 13 MiB hole beside a live block is not that, a whole free segment is. */
static void test_limit_caps_growth(void **state)
{
    (void)state;
    fixture *f = fx_new(GiB);
    f->cfg.limit_bytes = 256 * MiB;
    fx_start(f);
    void *live = must_alloc(f, 7 * MiB, NULL, CA_API_PLAIN);
    void *hole = must_alloc(f, 7 * MiB, NULL, CA_API_PLAIN); /* the same 20 MiB segment */
    void *whole = must_alloc(f, 100 * MiB, NULL, CA_API_PLAIN);
    must_free(f, hole, NULL, CA_API_PLAIN);
    must_free(f, whole, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).reserved_bytes, 120 * MiB);
    uint64_t fig = figure(f);
    assert_int_equal(fig, 256 * MiB - 20 * MiB);
    assert_served(f, fig, true);
    must_free(f, live, NULL, CA_API_PLAIN);
    fx_finish(f);
}

/* A growth takes the lowest hole that holds the request, even where a higher one would need
 * less of the driver's memory: past what the lowest serves, nothing more is promised. */
static void test_lowest_hole_decides(void **state)
{
    (void)state;
    fixture *f = start(64 * MiB, 1);
    char *x = must_alloc(f, 20 * MiB, NULL, CA_API_PLAIN); /* pages 0..9 */
    char *y = must_alloc(f, 3 * MiB, NULL, CA_API_PLAIN);  /* pages 10, 11: 1 MiB free tail */
    must_free(f, x, NULL, CA_API_PLAIN);
    assert_int_equal(ca_reclaim(f->a, 0), 20 * MiB); /* a 20 MiB hole below y */
    void *other = NULL;                                /* memory the cache does not hold */
    assert_int_equal(f->be.alloc(f->be.ctx, 0, 44 * MiB, &other), CA_OK);
    /* 16 MiB left: the low hole holds 17 MiB but can map only 16; the tail and the end hole
     * would have made 17. */
    uint64_t fig = figure(f);
    assert_int_equal(fig, 16 * MiB);
    assert_served(f, fig, true);
    assert_int_equal(f->be.release(f->be.ctx, 0, other), CA_OK);
    must_free(f, y, NULL, CA_API_PLAIN);
    fx_finish(f);
}

static uint64_t next_random(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* One random workload on a 256 MiB device (seeded: plain segments or ranges, thread caches,
 * a limit, a split limit, big-block alignment, a non-blocking stream whose work holds plain
 * frees pending), asking for the figure every 25 operations: a request of the figure is
 * served every time; *exact counts the times one of 512 bytes more was refused. */
static void random_workload(uint64_t seed, int *asked, int *exact)
{
    uint64_t x = seed * 2654435761u + 1;
    fixture *f = fx_new(256 * MiB);
    f->cfg.expandable = next_random(&x) % 2;
    f->cfg.thread_cache = next_random(&x) % 2;
    f->cfg.limit_bytes = next_random(&x) % 4 == 0 ? 160 * MiB : 0;
    f->cfg.max_split = next_random(&x) % 4 == 0 ? 40 * MiB : UINT64_MAX;
    f->cfg.big_align = next_random(&x) % 3 == 0 ? 64 * KiB : 0;
    fx_start(f);
    bool fenced = next_random(&x) % 2;
    if (fenced)
        ca_stream_created(f->a, 0, S1, 1);
    enum { N = 64 };
    void *p[N] = {0};
    unsigned api[N] = {0};
    for (int op = 0; op < 400; op++) {
        int i = (int)(next_random(&x) % N);
        ca_stream_t s = api[i] == CA_API_ASYNC ? S1 : NULL;
        if (p[i]) {
            must_free(f, p[i], s, api[i]);
            p[i] = NULL;
        } else {
            size_t size = (size_t)512 << (next_random(&x) % 16);
            size += next_random(&x) % size;
            if (next_random(&x) % 16 == 0) /* a solo mapping's size (CA_SOLO_MIN: 64 MiB) */
                size = 64 * MiB + next_random(&x) % (32 * MiB);
            api[i] = fenced && next_random(&x) % 4 == 0 ? CA_API_ASYNC : CA_API_PLAIN;
            s = api[i] == CA_API_ASYNC ? S1 : NULL;
            if (ca_malloc(f->a, 0, size, s, api[i], &p[i]) != CA_OK)
                p[i] = NULL;
            else if (fenced && next_random(&x) % 2)
                fake_use(&f->dev, S1, p[i], size);
        }
        if (next_random(&x) % 10 == 0)
            fake_complete_all(&f->dev);
        if (op % 25 == 24 && figure(f) >= 512) {
            void *q = NULL;
            (*asked)++;
            if (ca_malloc(f->a, 0, figure(f) + 512, NULL, CA_API_PLAIN, &q) == CA_OK)
                must_free(f, q, NULL, CA_API_PLAIN);
            else
                (*exact)++;
            q = must_alloc(f, figure(f), NULL, CA_API_PLAIN);
            must_free(f, q, NULL, CA_API_PLAIN);
        }
    }
    for (int i = 0; i < N; i++)
        if (p[i])
            must_free(f, p[i], api[i] == CA_API_ASYNC ? S1 : NULL, api[i]);
    fx_finish(f);
}

/* The figure is never more than one request gets, and rarely less: where it is, a growth
 * would rely on a hole lying below a range the ladder opens on the way, whose place is the
 * driver's choice. */
static void test_random_workloads(void **state)
{
    (void)state;
    int asked = 0, exact = 0;
    for (uint64_t seed = 1; seed <= 300; seed++)
        random_workload(seed, &asked, &exact);
    assert_true(asked > 4000);
    assert_true(exact >= asked / 100 * 95);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_segments_count_whole_segments_only),
        cmocka_unit_test(test_expandable_counts_whole_mappings_only),
        cmocka_unit_test(test_expandable_scattered_frees),
        cmocka_unit_test(test_pending_counts_at_once_plain),
        cmocka_unit_test(test_pending_counts_at_once_expandable),
        cmocka_unit_test(test_thread_kept_blocks_count),
        cmocka_unit_test(test_limit_caps_growth),
        cmocka_unit_test(test_lowest_hole_decides),
        cmocka_unit_test(test_random_workloads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
