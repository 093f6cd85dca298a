/* The arena against the fake backend: split and merge, best fit, the reuse contract, every
 * step of the out-of-memory ladder, limits, threshold, preallocation and bad frees. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arena_fixture.h"

static int setup(void **state)
{
    fixture *f = fx_new(8 * GiB);
    fx_start(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_finish(*state);
    return 0;
}

static void test_zero_and_null(void **state)
{
    fixture *f = *state;
    void *p = (void *)1;
    assert_int_equal(ca_malloc(f->a, 0, 0, NULL, CA_API_PLAIN, &p), CA_OK);
    assert_null(p);
    assert_int_equal(ca_malloc(f->a, 0, 16, NULL, CA_API_PLAIN, NULL), CA_ERR_INVALID);
    assert_int_equal(ca_malloc(f->a, -1, 16, NULL, CA_API_PLAIN, &p), CA_ERR_INVALID);
    assert_int_equal(ca_free(f->a, NULL, NULL, CA_API_PLAIN, NULL), CA_ERR_NOT_OURS);
}

static void test_split_and_merge(void **state)
{
    fixture *f = *state;
    char *a = must_alloc(f, 1000, NULL, CA_API_PLAIN);
    char *b = must_alloc(f, 1000, NULL, CA_API_PLAIN);
    char *c = must_alloc(f, 1000, NULL, CA_API_PLAIN);
    /* One 2 MiB segment, cut into 1024-byte blocks (512-byte rounding). */
    assert_int_equal(f->dev.allocs, 1);
    assert_ptr_equal(b, a + 1024);
    assert_ptr_equal(c, b + 1024);
    assert_int_equal(stats(f).reserved_bytes, 2 * MiB);
    assert_int_equal(stats(f).allocated_bytes, 3 * 1024);
    /* a and b merge into one 2048-byte hole, which a 2000-byte request fits exactly. */
    must_free(f, a, NULL, CA_API_PLAIN);
    must_free(f, b, NULL, CA_API_PLAIN);
    char *d = must_alloc(f, 2000, NULL, CA_API_PLAIN);
    assert_ptr_equal(d, a);
    must_free(f, d, NULL, CA_API_PLAIN);
    must_free(f, c, NULL, CA_API_PLAIN);
    /* Everything merged back: one whole block, the largest free block is the segment. */
    ca_dev_stats st = stats(f);
    assert_int_equal(st.largest_free_block, 2 * MiB);
    assert_int_equal(st.cached_bytes, 2 * MiB);
    assert_balanced(f);
    /* An empty segment can be handed out whole. */
    char *e = must_alloc(f, 1 * MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(e, a);
    assert_int_equal(f->dev.allocs, 1);
    must_free(f, e, NULL, CA_API_PLAIN);
}

static void test_best_fit(void **state)
{
    fixture *f = *state;
    /* Holes of 4K, 16K and 8K separated by live blocks; a 6K request takes the 8K hole. */
    char *h4 = must_alloc(f, 4 * KiB, NULL, CA_API_PLAIN);
    char *x1 = must_alloc(f, 512, NULL, CA_API_PLAIN);
    char *h16 = must_alloc(f, 16 * KiB, NULL, CA_API_PLAIN);
    char *x2 = must_alloc(f, 512, NULL, CA_API_PLAIN);
    char *h8 = must_alloc(f, 8 * KiB, NULL, CA_API_PLAIN);
    char *x3 = must_alloc(f, 512, NULL, CA_API_PLAIN);
    must_free(f, h4, NULL, CA_API_PLAIN);
    must_free(f, h16, NULL, CA_API_PLAIN);
    must_free(f, h8, NULL, CA_API_PLAIN);
    char *p = must_alloc(f, 6 * KiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(p, h8);
    char *q = must_alloc(f, 10 * KiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(q, h16);
    char *r = must_alloc(f, 3 * KiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(r, h4);
    assert_int_equal(f->dev.allocs, 1);
    must_free(f, p, NULL, CA_API_PLAIN);
    must_free(f, q, NULL, CA_API_PLAIN);
    must_free(f, r, NULL, CA_API_PLAIN);
    must_free(f, x1, NULL, CA_API_PLAIN);
    must_free(f, x2, NULL, CA_API_PLAIN);
    must_free(f, x3, NULL, CA_API_PLAIN);
    assert_balanced(f);
}

static void test_segment_sizes(void **state)
{
    fixture *f = *state;
    void *s = must_alloc(f, 100, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).reserved_bytes, 2 * MiB);
    void *m = must_alloc(f, 3 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).reserved_bytes, 22 * MiB);
    /* 11 MiB fits the 17 MiB left in the 20 MiB segment; 17 MiB + 1 does not. */
    void *m2 = must_alloc(f, 11 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).reserved_bytes, 22 * MiB);
    void *l = must_alloc(f, 17 * MiB + 1, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).reserved_bytes, 22 * MiB + 18 * MiB);
    /* Small requests never come out of a large segment, even with room there. */
    void *s2 = must_alloc(f, 600 * KiB, NULL, CA_API_PLAIN);
    void *s3 = must_alloc(f, 600 * KiB, NULL, CA_API_PLAIN);
    void *s4 = must_alloc(f, 600 * KiB, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).reserved_bytes, 22 * MiB + 18 * MiB);
    void *s5 = must_alloc(f, 600 * KiB, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).reserved_bytes, 2 * MiB + 22 * MiB + 18 * MiB);
    void *ps[] = {s, m, m2, l, s2, s3, s4, s5};
    for (size_t i = 0; i < 8; i++)
        must_free(f, ps[i], NULL, CA_API_PLAIN);
    assert_balanced(f);
}

static void test_max_split(void **state)
{
    (void)state;
    fixture *f = fx_new(8 * GiB);
    f->cfg.max_split = 64 * MiB;
    fx_start(f);
    void *big = must_alloc(f, 100 * MiB, NULL, CA_API_PLAIN);
    must_free(f, big, NULL, CA_API_PLAIN);
    /* A 30 MiB request must not be cut out of the unsplittable 100 MiB block. */
    void *mid = must_alloc(f, 30 * MiB, NULL, CA_API_PLAIN);
    assert_ptr_not_equal(mid, big);
    assert_int_equal(f->dev.allocs, 2);
    /* A 90 MiB request may take it whole (waste under 20 MiB), without splitting. */
    void *big2 = must_alloc(f, 90 * MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(big2, big);
    ca_dev_stats st = stats(f);
    assert_int_equal(st.allocated_bytes, 100 * MiB + 30 * MiB);
    must_free(f, mid, NULL, CA_API_PLAIN);
    must_free(f, big2, NULL, CA_API_PLAIN);
    teardown((void **)&f);
}

static void test_single_stream_reuse_without_sync(void **state)
{
    fixture *f = *state;
    void *first = must_alloc(f, 256 * MiB, NULL, CA_API_PLAIN);
    must_free(f, first, NULL, CA_API_PLAIN);
    for (int i = 0; i < 1000; i++) {
        void *p = must_alloc(f, 256 * MiB, NULL, CA_API_PLAIN);
        assert_ptr_equal(p, first);
        must_free(f, p, NULL, CA_API_PLAIN);
    }
    assert_int_equal(f->dev.allocs, 1);
    assert_int_equal(f->dev.device_syncs, 0);
    assert_int_equal(f->dev.records, 0);
    ca_dev_stats st = stats(f);
    assert_int_equal(st.alloc_calls, 1001);
    assert_int_equal(st.cache_hits, 1000);
    assert_int_equal(st.driver_alloc_calls, 1);
    assert_int_equal(st.growths, 1); /* the one segment: grow_ns is its call's time */
}

static void test_first_stream_syncs_once(void **state)
{
    fixture *f = *state;
    void *p = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    must_free(f, p, NULL, CA_API_PLAIN);
    ca_stream_created(f->a, 0, S1, 1);
    assert_int_equal(f->dev.device_syncs, 1);
    ca_stream_created(f->a, 0, S2, 1);
    assert_int_equal(f->dev.device_syncs, 1);
    /* The block freed before the switch is safe now: the sync covered it. */
    void *q = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(q, p);
    must_free(f, q, NULL, CA_API_PLAIN);
}

static void test_plain_free_waits_for_fence(void **state)
{
    fixture *f = *state;
    ca_stream_created(f->a, 0, S1, 1);
    ca_stream_created(f->a, 0, S2, 1);
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    fake_work(&f->dev, S2); /* a kernel on S2 still reads x */
    must_free(f, x, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).pending_bytes, MiB);
    /* The next allocation fences the batch and must not receive x while S2 runs. */
    char *y = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_ptr_not_equal(y, x);
    assert_true(y < x || y >= x + MiB);
    assert_int_equal(stats(f).fences, 1);
    /* The legacy stream's event and one on S2; idle S1 was asked instead, and needs none. */
    assert_int_equal(f->dev.records, 2);
    assert_true(f->dev.stream_queries >= 2);
    fake_complete(&f->dev, S2);
    char *z = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(z, x);
    assert_int_equal(stats(f).pending_bytes, 0);
    must_free(f, y, NULL, CA_API_PLAIN);
    must_free(f, z, NULL, CA_API_PLAIN);
    assert_balanced(f);
}

/* A query that fails (a faulted device answers every call with its error) is never taken as
 * the fence's completion: the freed block stays out of reuse even once the work is done. */
static void test_failed_query_is_not_completion(void **state)
{
    fixture *f = *state;
    ca_stream_created(f->a, 0, S1, 1);
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    fake_work(&f->dev, S1);
    must_free(f, x, NULL, CA_API_PLAIN);
    char *y = must_alloc(f, MiB, NULL, CA_API_PLAIN); /* records the fence */
    assert_ptr_not_equal(y, x);
    f->dev.query_error = 1;
    fake_complete(&f->dev, S1);
    char *z[3];
    for (int i = 0; i < 3; i++) {
        z[i] = must_alloc(f, MiB, NULL, CA_API_PLAIN);
        assert_ptr_not_equal(z[i], x);
    }
    assert_int_equal(stats(f).pending_bytes, MiB);
    f->dev.query_error = 0;
    char *w[2];
    for (int i = 0; i < 2; i++)
        w[i] = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_true(w[0] == x || w[1] == x);
    must_free(f, y, NULL, CA_API_PLAIN);
    for (int i = 0; i < 3; i++)
        must_free(f, z[i], NULL, CA_API_PLAIN);
    for (int i = 0; i < 2; i++)
        must_free(f, w[i], NULL, CA_API_PLAIN);
    assert_balanced(f);
}

/* CACHEALLOC_REUSE=sync: a plain free synchronizes the device first, as the runtime's free does,
 * and its block serves the next allocation at once, on a device with streams too (no fence).
 * What is no live block gets ca_free's answer without a synchronization; during a capture the
 * free makes no device call and its block waits for a fence. */
static void test_sync_free(void **state)
{
    (void)state;
    fixture *f = fx_new(8 * GiB);
    f->cfg.reuse = CA_REUSE_SYNC;
    fx_start(f);
    ca_stream_created(f->a, 0, S1, 1);
    uint64_t syncs = f->dev.device_syncs; /* the switch to fences made one */
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    fake_work(&f->dev, S1); /* a kernel on S1 still uses x */
    int dev = -1;
    assert_int_equal(ca_free_synced(f->a, x, &dev), CA_OK);
    assert_int_equal(dev, 0);
    assert_int_equal(f->dev.device_syncs, syncs + 1);
    assert_true(fake_done(&f->dev, S1, fake_enqueued(&f->dev, S1)));
    assert_int_equal(stats(f).pending_bytes, 0);
    assert_int_equal(stats(f).device_syncs, 2);
    char *y = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(y, x);
    assert_int_equal(stats(f).fences, 0);
    /* Not a live block: ca_free's answers, no synchronization. */
    assert_int_equal(ca_free_synced(f->a, y + 512, NULL), CA_ERR_INVALID);
    assert_int_equal(ca_free_synced(f->a, &dev, NULL), CA_ERR_NOT_OURS);
    assert_int_equal(f->dev.device_syncs, syncs + 1);
    /* A capture: no device call; the block is pending until a fence after it. */
    ca_quiet_begin(f->a);
    assert_int_equal(ca_free_synced(f->a, y, NULL), CA_OK);
    assert_int_equal(f->dev.device_syncs, syncs + 1);
    assert_int_equal(stats(f).pending_bytes, MiB);
    ca_quiet_end(f->a);
    assert_int_equal(ca_free_synced(f->a, y, NULL), CA_ERR_INVALID); /* freed already */
    assert_balanced(f);
    fx_finish(f);
}

static void test_fences_batch_frees(void **state)
{
    fixture *f = *state;
    ca_stream_created(f->a, 0, S1, 1);
    void *ps[50];
    for (int i = 0; i < 50; i++)
        ps[i] = must_alloc(f, 4 * KiB, NULL, CA_API_PLAIN);
    fake_work(&f->dev, S1);
    for (int i = 0; i < 50; i++)
        must_free(f, ps[i], NULL, CA_API_PLAIN);
    uint64_t before = f->dev.records;
    void *p = must_alloc(f, 4 * KiB, NULL, CA_API_PLAIN);
    /* Fifty frees, one fence: legacy + busy S1. */
    assert_int_equal(f->dev.records - before, 2);
    assert_int_equal(stats(f).fences, 1);
    must_free(f, p, NULL, CA_API_PLAIN);
}

static void test_device_sync_completes_fences(void **state)
{
    fixture *f = *state;
    ca_stream_created(f->a, 0, S1, 1);
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    fake_work(&f->dev, S1);
    must_free(f, x, NULL, CA_API_PLAIN);
    uint64_t token = ca_device_sync_begin(f->a, 0);
    /* A free made by another thread while the program synchronizes is not covered. */
    char *w = must_alloc(f, 2 * MiB + 512, NULL, CA_API_PLAIN);
    fake_work(&f->dev, S1);
    must_free(f, w, NULL, CA_API_PLAIN);
    ca_device_synchronized(f->a, 0, token); /* no fake_complete: the arena trusts the program */
    assert_int_equal(stats(f).pending_bytes, 2 * MiB + 512);
    char *y = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(y, x);
    must_free(f, y, NULL, CA_API_PLAIN);
}

static void test_async_same_stream_reuse(void **state)
{
    fixture *f = *state;
    ca_stream_created(f->a, 0, S1, 1);
    ca_stream_created(f->a, 0, S2, 1);
    char *x = must_alloc(f, MiB, S1, CA_API_ASYNC);
    fake_work(&f->dev, S1);
    must_free(f, x, S1, CA_API_ASYNC);
    /* Stream order protects a later allocation on S1: reuse at once. */
    char *y = must_alloc(f, MiB, S1, CA_API_ASYNC);
    assert_ptr_equal(y, x);
    fake_work(&f->dev, S1);
    must_free(f, y, S1, CA_API_ASYNC);
    /* Not for S2 while S1's work runs. */
    char *z = must_alloc(f, MiB, S2, CA_API_ASYNC);
    assert_true(z < x || z >= x + 2 * MiB);
    must_free(f, z, S2, CA_API_ASYNC);
    fake_complete(&f->dev, S1);
    /* S1's event completed: its whole free segment may move to S2, once S2's own segment
     * (z's) is used up. */
    uint64_t allocs = f->dev.allocs;
    char *w1 = must_alloc(f, MiB, S2, CA_API_ASYNC);
    char *w2 = must_alloc(f, MiB, S2, CA_API_ASYNC);
    char *w3 = must_alloc(f, MiB, S2, CA_API_ASYNC);
    assert_ptr_equal(w3, x);
    assert_int_equal(f->dev.allocs, allocs);
    must_free(f, w1, S2, CA_API_ASYNC);
    must_free(f, w2, S2, CA_API_ASYNC);
    must_free(f, w3, S2, CA_API_ASYNC);
    assert_balanced(f);
}

static void test_async_free_on_other_stream_waits(void **state)
{
    fixture *f = *state;
    ca_stream_created(f->a, 0, S1, 1);
    ca_stream_created(f->a, 0, S2, 1);
    char *x = must_alloc(f, MiB, S1, CA_API_ASYNC);
    fake_work(&f->dev, S2);
    must_free(f, x, S2, CA_API_ASYNC); /* used and freed on S2, allocated on S1 */
    char *y = must_alloc(f, MiB, S1, CA_API_ASYNC);
    assert_ptr_not_equal(y, x);
    fake_complete(&f->dev, S2);
    must_free(f, y, S1, CA_API_ASYNC);
    char *z = must_alloc(f, MiB, S1, CA_API_ASYNC);
    char *z2 = must_alloc(f, MiB, S1, CA_API_ASYNC);
    assert_true(z == x || z2 == x);
    must_free(f, z, S1, CA_API_ASYNC);
    must_free(f, z2, S1, CA_API_ASYNC);
}

/* A stream found idle has finished every free made on it: a free made while the pool's event
 * was in flight needs no second event once the stream is idle. */
static void test_idle_stream_passes_without_event(void **state)
{
    fixture *f = *state;
    ca_stream_created(f->a, 0, S1, 1);
    ca_stream_created(f->a, 0, S2, 1);
    char *x1 = must_alloc(f, 64 * MiB, S1, CA_API_ASYNC);
    char *x2 = must_alloc(f, 64 * MiB, S1, CA_API_ASYNC);
    fake_work(&f->dev, S1);
    must_free(f, x1, S1, CA_API_ASYNC); /* records the pool's event */
    must_free(f, x2, S1, CA_API_ASYNC); /* covered by no event yet */
    char *y = must_alloc(f, 64 * MiB, S2, CA_API_ASYNC);
    assert_true(y != x1 && y != x2); /* S1 still runs work that may use them */
    fake_complete(&f->dev, S1);
    uint64_t records = f->dev.records;
    char *z1 = must_alloc(f, 64 * MiB, S2, CA_API_ASYNC);
    char *z2 = must_alloc(f, 64 * MiB, S2, CA_API_ASYNC);
    assert_true((z1 == x1 && z2 == x2) || (z1 == x2 && z2 == x1));
    assert_int_equal(f->dev.allocs, 3);
    assert_int_equal(f->dev.records, records); /* S1 was asked, not given an event */
    must_free(f, y, S2, CA_API_ASYNC);
    must_free(f, z1, S2, CA_API_ASYNC);
    must_free(f, z2, S2, CA_API_ASYNC);
}

static void test_stream_reuse_contract_is_immediate(void **state)
{
    (void)state;
    fixture *f = fx_new(8 * GiB);
    f->cfg.reuse = CA_REUSE_STREAM;
    fx_start(f);
    ca_stream_created(f->a, 0, S1, 1);
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    fake_work(&f->dev, S1);
    must_free(f, x, NULL, CA_API_PLAIN);
    char *y = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(y, x);
    assert_int_equal(f->dev.records, 0);
    assert_int_equal(f->dev.device_syncs, 0);
    must_free(f, y, NULL, CA_API_PLAIN);
    teardown((void **)&f);
}

static void test_destroyed_stream_gates_fences(void **state)
{
    fixture *f = *state;
    ca_stream_created(f->a, 0, S1, 1);
    ca_stream_created(f->a, 0, S2, 1);
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    fake_work(&f->dev, S2);
    ca_stream_destroyed(f->a, 0, S2); /* its work goes on after the destroy */
    must_free(f, x, NULL, CA_API_PLAIN);
    char *y = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_ptr_not_equal(y, x);
    fake_complete(&f->dev, NULL);
    fake_complete(&f->dev, S1);
    must_free(f, y, NULL, CA_API_PLAIN);
    char *z = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_ptr_not_equal(z, x); /* S2's last work still runs */
    fake_complete(&f->dev, S2);
    char *w = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    char *v = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    assert_true(w == x || v == x);
    must_free(f, z, NULL, CA_API_PLAIN);
    must_free(f, w, NULL, CA_API_PLAIN);
    must_free(f, v, NULL, CA_API_PLAIN);
}

static void test_oom_waits_for_fence(void **state)
{
    (void)state;
    fixture *f = fx_new(64 * MiB);
    fx_start(f);
    ca_stream_created(f->a, 0, S1, 1);
    char *x = must_alloc(f, 60 * MiB, NULL, CA_API_PLAIN);
    fake_work(&f->dev, S1);
    must_free(f, x, NULL, CA_API_PLAIN);
    /* The only fitting block waits on a fence and the device is full: wait, then succeed. */
    char *y = must_alloc(f, 60 * MiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(y, x);
    assert_true(f->dev.event_syncs > 0);
    ca_dev_stats st = stats(f);
    assert_int_equal(st.oom_recoveries, 1);
    assert_int_equal(st.oom_failures, 0);
    /* The arena saw the device was full before asking: no error for the runtime to record. */
    assert_int_equal(f->dev.clears, 0);
    assert_int_equal(f->dev.allocs, 1);
    must_free(f, y, NULL, CA_API_PLAIN);
    teardown((void **)&f);
}

static void test_oom_flushes_fragmented_cache(void **state)
{
    (void)state;
    fixture *f = fx_new(64 * MiB);
    fx_start(f);
    void *ps[60];
    for (int i = 0; i < 60; i++)
        ps[i] = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    for (int i = 0; i < 60; i++)
        must_free(f, ps[i], NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).reserved_bytes, 60 * MiB);
    /* 30 cached 2 MiB segments, none of which fits 40 MiB: flush them, then succeed. */
    void *big = must_alloc(f, 40 * MiB, NULL, CA_API_PLAIN);
    ca_dev_stats st = stats(f);
    assert_int_equal(st.reserved_bytes, 40 * MiB);
    assert_int_equal(st.oom_recoveries, 1);
    assert_int_equal(f->dev.releases, 30);
    assert_int_equal(f->dev.clears, 0);
    must_free(f, big, NULL, CA_API_PLAIN);
    teardown((void **)&f);
}

static void test_oom_truly_full(void **state)
{
    (void)state;
    fixture *f = fx_new(64 * MiB);
    fx_start(f);
    void *keep = must_alloc(f, 30 * MiB, NULL, CA_API_PLAIN);
    void *p = (void *)1;
    assert_int_equal(ca_malloc(f->a, 0, 40 * MiB, NULL, CA_API_PLAIN, &p), CA_ERR_OOM);
    assert_null(p);
    ca_dev_stats st = stats(f);
    assert_int_equal(st.oom_failures, 1);
    assert_int_equal(st.oom_recoveries, 0);
    assert_int_equal(f->dev.clears, 0); /* the error is real: the program must see it */
    assert_int_equal(st.allocated_bytes, 30 * MiB);
    assert_balanced(f);
    /* The pool still works. */
    void *q = must_alloc(f, 20 * MiB, NULL, CA_API_PLAIN);
    must_free(f, q, NULL, CA_API_PLAIN);
    must_free(f, keep, NULL, CA_API_PLAIN);
    teardown((void **)&f);
}

static void test_oom_segment_shrinks_to_request(void **state)
{
    (void)state;
    fixture *f = fx_new(64 * MiB);
    fx_start(f);
    void *keep = must_alloc(f, 50 * MiB, NULL, CA_API_PLAIN);
    /* 12 MiB free: a 3 MiB request's usual 20 MiB segment does not fit, the request does. */
    void *p = must_alloc(f, 3 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).reserved_bytes, 53 * MiB);
    assert_int_equal(f->dev.clears, 0);
    must_free(f, p, NULL, CA_API_PLAIN);
    must_free(f, keep, NULL, CA_API_PLAIN);
    teardown((void **)&f);
}

static void test_driver_failure_is_cleared(void **state)
{
    (void)state;
    fixture *f = fx_new(64 * MiB);
    fx_start(f);
    /* The driver refuses although memory looks free (fragmentation, another process): the
     * arena retries with the request's own size and clears the error the refusal left. */
    f->dev.fail_next_allocs = 1;
    void *p = must_alloc(f, 3 * MiB, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).reserved_bytes, 3 * MiB);
    assert_int_equal(stats(f).oom_recoveries, 1);
    assert_int_equal(f->dev.clears, 1);
    must_free(f, p, NULL, CA_API_PLAIN);
    teardown((void **)&f);
}

static void test_limit(void **state)
{
    (void)state;
    fixture *f = fx_new(8 * GiB);
    f->cfg.limit_bytes = 50 * MiB;
    fx_start(f);
    void *a = must_alloc(f, 30 * MiB, NULL, CA_API_PLAIN);
    void *p;
    assert_int_equal(ca_malloc(f->a, 0, 30 * MiB, NULL, CA_API_PLAIN, &p), CA_ERR_OOM);
    assert_int_equal(f->dev.allocs, 1);
    void *b = must_alloc(f, 20 * MiB, NULL, CA_API_PLAIN);
    assert_true(stats(f).reserved_bytes <= 50 * MiB);
    must_free(f, a, NULL, CA_API_PLAIN);
    must_free(f, b, NULL, CA_API_PLAIN);
    teardown((void **)&f);
}

static void test_limit_percent(void **state)
{
    (void)state;
    fixture *f = fx_new(100 * MiB);
    f->cfg.limit_percent = 50;
    fx_start(f);
    void *p;
    assert_int_equal(ca_malloc(f->a, 0, 60 * MiB, NULL, CA_API_PLAIN, &p), CA_ERR_OOM);
    void *q = must_alloc(f, 40 * MiB, NULL, CA_API_PLAIN);
    must_free(f, q, NULL, CA_API_PLAIN);
    teardown((void **)&f);
}

static void test_release_threshold(void **state)
{
    (void)state;
    fixture *f = fx_new(8 * GiB);
    f->cfg.release_threshold = 30 * MiB;
    fx_start(f);
    void *ps[4];
    for (int i = 0; i < 4; i++)
        ps[i] = must_alloc(f, 20 * MiB, NULL, CA_API_PLAIN);
    for (int i = 0; i < 4; i++)
        must_free(f, ps[i], NULL, CA_API_PLAIN);
    /* Kept until a point where releasing costs no extra wait: the program's device sync. */
    assert_int_equal(stats(f).cached_bytes, 80 * MiB);
    assert_int_equal(f->dev.releases, 0);
    uint64_t t = ca_device_sync_begin(f->a, 0);
    ca_device_synchronized(f->a, 0, t);
    assert_true(stats(f).cached_bytes <= 30 * MiB);
    assert_int_equal(stats(f).cached_bytes, 20 * MiB);
    assert_balanced(f);
    teardown((void **)&f);
}

static void test_prealloc(void **state)
{
    (void)state;
    fixture *f = fx_new(8 * GiB);
    f->cfg.prealloc_bytes = 256 * MiB;
    f->cfg.release_threshold = 0;
    fx_start(f);
    void *ps[40];
    for (int i = 0; i < 40; i++)
        ps[i] = must_alloc(f, 5 * MiB, NULL, CA_API_PLAIN);
    for (int i = 0; i < 40; i++)
        must_free(f, ps[i], NULL, CA_API_PLAIN);
    assert_int_equal(f->dev.allocs, 1);
    assert_int_equal(stats(f).reserved_bytes, 256 * MiB);
    /* The threshold trim keeps the preallocation... */
    uint64_t t = ca_device_sync_begin(f->a, 0);
    ca_device_synchronized(f->a, 0, t);
    assert_int_equal(stats(f).reserved_bytes, 256 * MiB);
    /* ...an explicit reclaim does not. */
    assert_int_equal(ca_reclaim(f->a, -1), 256 * MiB);
    assert_int_equal(stats(f).reserved_bytes, 0);
    teardown((void **)&f);
}

static void test_bad_frees_leave_pool_unchanged(void **state)
{
    fixture *f = *state;
    char *p = must_alloc(f, 4 * KiB, NULL, CA_API_PLAIN);
    char *q = must_alloc(f, 4 * KiB, NULL, CA_API_PLAIN);
    ca_dev_stats before = stats(f);
    assert_int_equal(ca_free(f->a, p + 512, NULL, CA_API_PLAIN, NULL), CA_ERR_INVALID);
    must_free(f, p, NULL, CA_API_PLAIN);
    ca_dev_stats mid = stats(f);
    assert_int_equal(ca_free(f->a, p, NULL, CA_API_PLAIN, NULL), CA_ERR_INVALID);
    assert_int_equal(ca_free(f->a, (void *)0x1234, NULL, CA_API_PLAIN, NULL), CA_ERR_NOT_OURS);
    ca_dev_stats after = stats(f);
    assert_int_equal(after.invalid_frees, 2);
    assert_int_equal(after.cached_bytes, mid.cached_bytes);
    assert_int_equal(after.allocated_bytes, mid.allocated_bytes);
    assert_int_equal(before.allocated_bytes - 4 * KiB, mid.allocated_bytes);
    /* The double-freed block is handed out once, not twice. */
    char *r = must_alloc(f, 4 * KiB, NULL, CA_API_PLAIN);
    char *s = must_alloc(f, 4 * KiB, NULL, CA_API_PLAIN);
    assert_ptr_equal(r, p);
    assert_ptr_not_equal(s, p);
    int dev = -1;
    size_t size = 0;
    assert_int_equal(ca_lookup(f->a, q, &dev, &size), 1);
    assert_int_equal(size, 4 * KiB);
    assert_int_equal(ca_lookup(f->a, q + 1, NULL, NULL), 0);
    must_free(f, q, NULL, CA_API_PLAIN);
    must_free(f, r, NULL, CA_API_PLAIN);
    must_free(f, s, NULL, CA_API_PLAIN);
}

/* ca_locate names the segment and block holding any address, interior ones included. */
static void test_locate(void **state)
{
    fixture *f = *state;
    char *p = must_alloc(f, 4 * KiB, NULL, CA_API_PLAIN);
    char *q = must_alloc(f, 4 * KiB, NULL, CA_API_PLAIN);
    ca_place at;
    assert_int_equal(ca_locate(f->a, q + 100, &at), 1);
    assert_int_equal(at.dev, 0);
    assert_ptr_equal((void *)at.seg_base, p); /* both blocks share the first one's segment */
    assert_true(at.seg_size >= 8 * KiB);
    assert_ptr_equal((void *)at.block, q);
    assert_int_equal(at.live, 1);
    assert_int_equal(at.expandable, 0);
    must_free(f, p, NULL, CA_API_PLAIN);
    assert_int_equal(ca_locate(f->a, p, &at), 1);
    assert_int_equal(at.live, 0);
    assert_int_equal(ca_locate(f->a, (void *)0x1234, &at), 0);
    must_free(f, q, NULL, CA_API_PLAIN);
}

static void test_two_devices(void **state)
{
    fixture *f = *state;
    void *p0 = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    void *p1 = NULL;
    assert_int_equal(ca_malloc(f->a, 1, MiB, NULL, CA_API_PLAIN, &p1), CA_OK);
    int dev = -1;
    assert_int_equal(ca_free(f->a, p1, NULL, CA_API_PLAIN, &dev), CA_OK);
    assert_int_equal(dev, 1);
    assert_int_equal(ca_free(f->a, p0, NULL, CA_API_PLAIN, &dev), CA_OK);
    assert_int_equal(dev, 0);
    assert_int_equal(ca_device_count(f->a), 2);
    ca_dev_stats st1;
    assert_int_equal(ca_get_stats(f->a, 1, &st1), 1);
    assert_int_equal(st1.cached_bytes, 2 * MiB);
}

static void test_device_reset_forgets(void **state)
{
    fixture *f = *state;
    void *p = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    void *q = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    must_free(f, q, NULL, CA_API_PLAIN);
    /* The runtime freed the device's memory itself. */
    f->dev.nlive = 0;
    f->dev.used = 0;
    ca_device_reset(f->a, 0);
    ca_dev_stats st = stats(f);
    assert_int_equal(st.reserved_bytes, 0);
    assert_int_equal(ca_free(f->a, p, NULL, CA_API_PLAIN, NULL), CA_ERR_NOT_OURS);
    void *r = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    must_free(f, r, NULL, CA_API_PLAIN);
}

static void test_pool_none(void **state)
{
    (void)state;
    fixture *f = fx_new(8 * GiB);
    f->cfg.pool = CA_POOL_NONE;
    fx_start(f);
    for (int i = 0; i < 10; i++) {
        void *p = must_alloc(f, 3000, NULL, CA_API_PLAIN);
        must_free(f, p, NULL, CA_API_PLAIN);
    }
    assert_int_equal(f->dev.allocs, 10);
    assert_int_equal(f->dev.releases, 10);
    ca_dev_stats st = stats(f);
    assert_int_equal(st.alloc_calls, 10);
    assert_int_equal(st.cache_hits, 0);
    assert_int_equal(st.reserved_bytes, 0);
    teardown((void **)&f);
}

static void test_pool_binned(void **state)
{
    (void)state;
    fixture *f = fx_new(8 * GiB);
    f->cfg.pool = CA_POOL_BINNED;
    fx_start(f);
    void *p = must_alloc(f, 3000, NULL, CA_API_PLAIN);
    assert_int_equal(stats(f).reserved_bytes, 4096);
    must_free(f, p, NULL, CA_API_PLAIN);
    void *q = must_alloc(f, 4000, NULL, CA_API_PLAIN); /* same bin */
    assert_ptr_equal(q, p);
    void *r = must_alloc(f, 1000, NULL, CA_API_PLAIN); /* other bin: never a split */
    assert_ptr_not_equal(r, p);
    assert_int_equal(stats(f).reserved_bytes, 4096 + 1024);
    must_free(f, q, NULL, CA_API_PLAIN);
    must_free(f, r, NULL, CA_API_PLAIN);
    teardown((void **)&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_zero_and_null, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_stream_passes_without_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_split_and_merge, setup, teardown),
        cmocka_unit_test_setup_teardown(test_best_fit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_segment_sizes, setup, teardown),
        cmocka_unit_test(test_max_split),
        cmocka_unit_test_setup_teardown(test_single_stream_reuse_without_sync, setup, teardown),
        cmocka_unit_test(test_sync_free),
        cmocka_unit_test_setup_teardown(test_first_stream_syncs_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain_free_waits_for_fence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_query_is_not_completion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fences_batch_frees, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_sync_completes_fences, setup, teardown),
        cmocka_unit_test_setup_teardown(test_async_same_stream_reuse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_async_free_on_other_stream_waits, setup, teardown),
        cmocka_unit_test(test_stream_reuse_contract_is_immediate),
        cmocka_unit_test_setup_teardown(test_destroyed_stream_gates_fences, setup, teardown),
        cmocka_unit_test(test_oom_waits_for_fence),
        cmocka_unit_test(test_oom_flushes_fragmented_cache),
        cmocka_unit_test(test_oom_truly_full),
        cmocka_unit_test(test_oom_segment_shrinks_to_request),
        cmocka_unit_test(test_driver_failure_is_cleared),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_limit_percent),
        cmocka_unit_test(test_release_threshold),
        cmocka_unit_test(test_prealloc),
        cmocka_unit_test_setup_teardown(test_bad_frees_leave_pool_unchanged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_locate, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_reset_forgets, setup, teardown),
        cmocka_unit_test(test_pool_none),
        cmocka_unit_test(test_pool_binned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
