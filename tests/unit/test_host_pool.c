/* The cache of pinned host memory against a fake driver: reuse by size class and exact flags,
 * the wait before a freed block is cached, the driver's refusals, the out-of-memory ladder
 * (cached blocks unpinned, then the exact size), the limit, the blocks of a gone owner, the
 * range a live block answers, and what it tells outside: counters in a device's shape, the
 * timeline, the walk of live blocks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "host/pool.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

/* A fake driver: pins from malloc, refuses past `capacity` pinned bytes, counts its calls. */
typedef struct fake {
    size_t capacity, pinned;
    int allocs, releases, waits;
    int wait_status, release_status;
    void *owner;              /* what the fake names the owner of a block it pins */
    void *owner_seen;         /* ... and what the last wait was given */
    ca_host_pool *hp;         /* set: the wait reads the pool's counters as they are then */
    bool forget_in_wait;      /* ... and forgets the owner it waits for (with hp set) */
    ca_dev_stats during_wait;
    void *pins[64];
    size_t sizes[64];
} fake;

static int fake_alloc(void *ctx, size_t size, unsigned flags, void **out, void **owner)
{
    (void)flags;
    fake *f = ctx;
    *owner = f->owner;
    if (f->capacity && f->pinned + size > f->capacity)
        return CA_ERR_OOM;
    void *p = malloc(size);
    if (!p)
        return CA_ERR_OOM;
    for (int i = 0; i < 64; i++)
        if (!f->pins[i]) {
            f->pins[i] = p;
            f->sizes[i] = size;
            break;
        }
    f->pinned += size;
    f->allocs++;
    *out = p;
    return CA_OK;
}

static int fake_release(void *ctx, void *p)
{
    fake *f = ctx;
    for (int i = 0; i < 64; i++)
        if (f->pins[i] == p) {
            f->pinned -= f->sizes[i];
            f->pins[i] = NULL;
            f->releases++;
            free(p);
            return f->release_status;
        }
    fail_msg("release of %p, which the fake never pinned", p);
    return CA_ERR_INVALID;
}

static int fake_wait(void *ctx, void *owner)
{
    fake *f = ctx;
    f->waits++;
    f->owner_seen = owner;
    if (f->hp)
        ca_host_get_dev_stats(f->hp, &f->during_wait);
    if (f->hp && f->forget_in_wait)
        ca_host_forget_owner(f->hp, owner);
    return f->wait_status;
}

typedef struct fixture {
    fake f;
    ca_host_pool *hp;
} fixture;

static int setup_with(void **state, size_t capacity, uint64_t limit)
{
    fixture *x = calloc(1, sizeof *x);
    x->f.capacity = capacity;
    ca_host_backend be = {&x->f, fake_alloc, fake_release, fake_wait};
    ca_host_config cfg = {.limit_bytes = limit};
    x->hp = ca_host_pool_create(&be, &cfg);
    assert_non_null(x->hp);
    *state = x;
    return 0;
}

static int setup(void **state) { return setup_with(state, 0, 0); }

static int teardown(void **state)
{
    fixture *x = *state;
    ca_host_pool_destroy(x->hp);
    /* Everything cached went back; what the tests left live is theirs (none do). */
    assert_int_equal(x->f.pinned, 0);
    free(x);
    return 0;
}

static void expect_balanced(const ca_dev_stats *s)
{
    assert_int_equal(s->reserved_bytes,
                     s->allocated_bytes + s->cached_bytes + s->pending_bytes);
}

static void *must_alloc(fixture *x, size_t size, unsigned flags)
{
    void *p = NULL;
    assert_int_equal(ca_host_malloc(x->hp, size, flags, &p), CA_OK);
    assert_non_null(p);
    return p;
}

static void test_freed_block_is_reused_after_a_wait(void **state)
{
    fixture *x = *state;
    int owner;
    x->f.owner = &owner;
    void *p = must_alloc(x, 64 * MiB, 0);
    x->f.owner = NULL; /* the block keeps the owner it was pinned for */
    assert_int_equal(ca_host_free(x->hp, p), CA_OK);
    assert_int_equal(x->f.waits, 1); /* as the driver's free waits for the device */
    assert_ptr_equal(x->f.owner_seen, &owner);
    assert_int_equal(x->f.releases, 0);
    for (int i = 0; i < 100; i++) {
        void *q = must_alloc(x, 64 * MiB, 0);
        assert_ptr_equal(q, p);
        assert_int_equal(ca_host_free(x->hp, q), CA_OK);
    }
    assert_int_equal(x->f.allocs, 1);
    ca_host_stats st;
    ca_host_get_stats(x->hp, &st);
    assert_int_equal(st.hits, 100);
    assert_int_equal(st.driver_alloc_calls, 1);
    assert_int_equal(st.cached_bytes, 64 * MiB);
    assert_int_equal(st.live_bytes, 0);
}

static void test_flags_are_never_mixed(void **state)
{
    fixture *x = *state;
    void *p = must_alloc(x, MiB, 1);
    assert_int_equal(ca_host_free(x->hp, p), CA_OK);
    void *q = must_alloc(x, MiB, 0);
    assert_ptr_not_equal(q, p);
    void *r = must_alloc(x, MiB, 1);
    assert_ptr_equal(r, p);
    assert_int_equal(x->f.allocs, 2);
    assert_int_equal(ca_host_free(x->hp, q), CA_OK);
    assert_int_equal(ca_host_free(x->hp, r), CA_OK);
}

static void test_sizes_round_to_a_class(void **state)
{
    fixture *x = *state;
    assert_int_equal(ca_host_class_size(1), 4096);
    assert_int_equal(ca_host_class_size(3 * MiB), 4 * MiB);
    assert_int_equal(ca_host_class_size(4 * MiB), 4 * MiB);
    void *p = must_alloc(x, 3 * MiB, 0);
    assert_int_equal(x->f.sizes[0], 4 * MiB);
    assert_int_equal(ca_host_free(x->hp, p), CA_OK);
    void *q = must_alloc(x, 4 * MiB - 1, 0);
    assert_ptr_equal(q, p);
    assert_int_equal(ca_host_free(x->hp, q), CA_OK);
}

static void test_bad_frees_are_refused(void **state)
{
    fixture *x = *state;
    char *p = must_alloc(x, MiB, 0);
    int other;
    assert_int_equal(ca_host_free(x->hp, &other), CA_ERR_NOT_OURS);
    assert_int_equal(ca_host_free(x->hp, p + 4096), CA_ERR_INVALID);
    assert_int_equal(x->f.waits, 0);
    assert_int_equal(ca_host_free(x->hp, p), CA_OK);
    assert_int_equal(ca_host_free(x->hp, p), CA_ERR_INVALID); /* freed already */
    assert_int_equal(x->f.waits, 1);
}

/* A wait that fails proves nothing about the device: the block goes back to the driver. */
static void test_a_failed_wait_returns_the_block(void **state)
{
    fixture *x = *state;
    void *p = must_alloc(x, MiB, 0);
    x->f.wait_status = CA_ERR_BACKEND;
    assert_int_equal(ca_host_free(x->hp, p), CA_ERR_BACKEND);
    assert_int_equal(x->f.releases, 1);
    x->f.wait_status = CA_OK;
    void *q = must_alloc(x, MiB, 0);
    assert_int_equal(x->f.allocs, 2);
    assert_int_equal(ca_host_free(x->hp, q), CA_OK);
}

/* A destroyed context takes its pinned memory with it: its cached blocks go back to the
 * driver at once, its live ones at their free, with no wait (nothing is left to wait in), and
 * the driver's answer is the free's. Another owner's blocks stay. */
static void test_a_gone_owner_takes_its_blocks(void **state)
{
    fixture *x = *state;
    int a, b;
    x->f.owner = &a;
    void *live = must_alloc(x, MiB, 0), *other_live = must_alloc(x, 8 * KiB, 0);
    assert_int_equal(ca_host_free(x->hp, must_alloc(x, 4 * MiB, 0)), CA_OK);
    x->f.owner = &b;
    void *kept = must_alloc(x, 2 * MiB, 0);
    assert_int_equal(ca_host_free(x->hp, kept), CA_OK);
    ca_host_forget_owner(x->hp, NULL); /* nothing known: nothing forgotten */
    assert_int_equal(x->f.releases, 0);
    ca_host_forget_owner(x->hp, &a);
    assert_int_equal(x->f.releases, 1); /* the cached 4 MiB */
    ca_host_stats st;
    ca_host_get_stats(x->hp, &st);
    assert_int_equal(st.cached_bytes, 2 * MiB);
    assert_int_equal(st.blocks, 3);
    int waits = x->f.waits;
    assert_int_equal(ca_host_free(x->hp, live), CA_OK);
    assert_int_equal(x->f.waits, waits);
    assert_int_equal(x->f.releases, 2);
    x->f.release_status = CA_ERR_BACKEND; /* the driver freed it with its context */
    assert_int_equal(ca_host_free(x->hp, other_live), CA_ERR_BACKEND);
    assert_int_equal(x->f.releases, 3);
    x->f.release_status = CA_OK;
    assert_ptr_equal(must_alloc(x, 2 * MiB, 0), kept);
    assert_int_equal(ca_host_free(x->hp, kept), CA_OK);
    assert_ptr_equal(x->f.owner_seen, &b);
    ca_host_get_stats(x->hp, &st);
    assert_int_equal(st.blocks, 1);
    assert_int_equal(st.live_bytes, 0);
}

/* The owner goes while a free of its block waits: the block is not cached. */
static void test_an_owner_gone_during_the_wait(void **state)
{
    fixture *x = *state;
    int a;
    x->f.owner = &a;
    void *p = must_alloc(x, MiB, 0);
    x->f.hp = x->hp;
    x->f.forget_in_wait = true;
    assert_int_equal(ca_host_free(x->hp, p), CA_OK);
    assert_int_equal(x->f.waits, 1);
    assert_int_equal(x->f.releases, 1);
    ca_host_stats st;
    ca_host_get_stats(x->hp, &st);
    assert_int_equal(st.blocks, 0);
    assert_int_equal(st.waiting_bytes + st.cached_bytes, 0);
}

static int setup_small(void **state) { return setup_with(state, 11 * MiB, 0); }

/* The driver refuses: cached blocks are unpinned and the allocation tried again; then the
 * size asked rather than its class. */
static void test_refusal_unpins_the_cache_then_tries_the_exact_size(void **state)
{
    fixture *x = *state;
    void *a = must_alloc(x, 4 * MiB, 0);
    void *b = must_alloc(x, 4 * MiB, 4);
    assert_int_equal(ca_host_free(x->hp, b), CA_OK); /* 4 MiB cached, flags 4 */
    void *c = must_alloc(x, 4 * MiB, 0);                   /* 12 MiB would not fit */
    ca_host_stats st;
    ca_host_get_stats(x->hp, &st);
    assert_int_equal(st.oom_recoveries, 1);
    assert_int_equal(st.cached_bytes, 0);
    assert_int_equal(x->f.releases, 1);
    /* 8 MiB pinned: a 1.5 MiB request's class (2 MiB) fits, a 2.5 MiB one's (4 MiB) does
     * not, its exact size (2.5 MiB, page-rounded) does. */
    void *d = must_alloc(x, 2 * MiB + MiB / 2, 0);
    assert_int_equal(x->f.pinned, 8 * MiB + 2 * MiB + MiB / 2);
    void *e = NULL;
    assert_int_equal(ca_host_malloc(x->hp, 4 * MiB, 0, &e), CA_ERR_OOM);
    /* The exact block is never cached: it goes back at its free. */
    assert_int_equal(ca_host_free(x->hp, d), CA_OK);
    assert_int_equal(x->f.pinned, 8 * MiB);
    assert_int_equal(ca_host_free(x->hp, a), CA_OK);
    assert_int_equal(ca_host_free(x->hp, c), CA_OK);
}

static int setup_limited(void **state) { return setup_with(state, 0, 8 * MiB); }

static void test_the_limit_counts_live_and_cached_memory(void **state)
{
    fixture *x = *state;
    void *a = must_alloc(x, 4 * MiB, 0);
    void *b = must_alloc(x, 2 * MiB, 0);
    assert_int_equal(ca_host_free(x->hp, b), CA_OK); /* 4 live, 2 cached */
    void *c = must_alloc(x, 4 * MiB, 0);                   /* the cached 2 MiB make room */
    assert_int_equal(x->f.releases, 1);
    void *d = NULL;
    assert_int_equal(ca_host_malloc(x->hp, 4096, 0, &d), CA_ERR_OOM); /* 8 MiB live */
    assert_int_equal(ca_host_free(x->hp, a), CA_OK);
    assert_int_equal(ca_host_free(x->hp, c), CA_OK);
    assert_int_equal(ca_host_trim(x->hp, 4 * MiB), 4 * MiB);
    ca_host_stats st;
    ca_host_get_stats(x->hp, &st);
    assert_int_equal(st.cached_bytes, 4 * MiB);
}

/* The range a program asks about is the block as it asked for it. */
static void test_a_live_block_answers_its_size(void **state)
{
    fixture *x = *state;
    char *p = must_alloc(x, 3 * MiB + 100, 0);
    uintptr_t start = 0;
    size_t size = 0;
    assert_true(ca_host_locate(x->hp, p + MiB, &start, &size));
    assert_true(start == (uintptr_t)p && size == 3 * MiB + 100);
    assert_false(ca_host_locate(x->hp, p + 3 * MiB + 100, &start, &size));
    assert_int_equal(ca_host_free(x->hp, p), CA_OK);
    assert_false(ca_host_locate(x->hp, p, &start, &size));
}

/* The statistics segment's "host" record: the pool's state in a device's shape. */
static void test_counters_in_a_devices_shape(void **state)
{
    fixture *x = *state;
    char *p = must_alloc(x, 3 * MiB + 100, 0); /* a 4 MiB block */
    void *q = must_alloc(x, MiB, 0);
    x->f.hp = x->hp;
    assert_int_equal(ca_host_free(x->hp, q), CA_OK);
    /* While the free waits, its block is neither the program's nor reusable. */
    assert_int_equal(x->f.during_wait.pending_bytes, MiB);
    assert_int_equal(x->f.during_wait.cached_bytes, 0);
    expect_balanced(&x->f.during_wait);
    assert_int_equal(ca_host_free(x->hp, p + 4096), CA_ERR_INVALID);
    q = must_alloc(x, MiB - 1, 0);
    assert_int_equal(ca_host_free(x->hp, q), CA_OK);
    ca_dev_stats s;
    ca_host_get_dev_stats(x->hp, &s);
    expect_balanced(&s);
    assert_int_equal(s.reserved_bytes, 5 * MiB);
    assert_int_equal(s.allocated_bytes, 4 * MiB);
    assert_int_equal(s.cached_bytes, MiB);
    assert_int_equal(s.pending_bytes, 0);
    assert_int_equal(s.requested_bytes, 3 * MiB + 100);
    assert_int_equal(s.peak_reserved_bytes, 5 * MiB);
    assert_int_equal(s.peak_allocated_bytes, 5 * MiB);
    assert_int_equal(s.alloc_calls, 3);
    assert_int_equal(s.free_calls, 2);
    assert_int_equal(s.cache_hits, 1);
    assert_int_equal(s.driver_alloc_calls, 2);
    assert_int_equal(s.driver_free_calls, 0);
    assert_int_equal(s.device_syncs, 2);
    assert_int_equal(s.invalid_frees, 1);
    assert_int_equal(s.segments, 2);
    assert_int_equal(s.largest_free_block, MiB);
    assert_int_equal(s.fences, 0);
    assert_int_equal(ca_host_free(x->hp, p), CA_OK);
}

static void test_refusals_are_counted(void **state)
{
    fixture *x = *state;
    void *a = must_alloc(x, 8 * MiB, 0);
    void *b = NULL;
    assert_int_equal(ca_host_malloc(x->hp, MiB, 0, &b), CA_ERR_OOM); /* over the limit */
    ca_dev_stats s;
    ca_host_get_dev_stats(x->hp, &s);
    assert_int_equal(s.oom_failures, 1);
    assert_int_equal(s.alloc_calls, 1);
    assert_int_equal(ca_host_free(x->hp, a), CA_OK);
}

typedef struct seen {
    char kinds[16];
    const void *ptrs[16];
    size_t sizes[16];
    int n;
} seen;

static void record(void *ctx, ca_trace_kind kind, int dev, const void *ptr, size_t size,
                   ca_stream_t stream)
{
    seen *s = ctx;
    assert_int_equal(dev, -1);
    assert_null(stream);
    assert_true(s->n < 16);
    s->kinds[s->n] = (char)kind;
    s->ptrs[s->n] = ptr;
    s->sizes[s->n++] = size;
}

/* The timeline has the program's calls (the size asked) and the driver's (the size pinned). */
static void test_the_timeline_has_every_call(void **state)
{
    (void)state;
    fake f = {0};
    seen s = {0};
    ca_host_backend be = {&f, fake_alloc, fake_release, fake_wait};
    ca_host_config cfg = {.trace = record, .trace_ctx = &s};
    ca_host_pool *hp = ca_host_pool_create(&be, &cfg);
    void *p = NULL, *q = NULL;
    assert_int_equal(ca_host_malloc(hp, 3 * MiB, 0, &p), CA_OK);
    assert_int_equal(ca_host_free(hp, p), CA_OK);
    assert_int_equal(ca_host_malloc(hp, 4 * MiB, 0, &q), CA_OK);
    assert_int_equal(ca_host_free(hp, q), CA_OK);
    ca_host_pool_destroy(hp);
    assert_int_equal(s.n, 6);
    assert_memory_equal(s.kinds, "PHhHhp", 6);
    const size_t sizes[6] = {4 * MiB, 3 * MiB, 3 * MiB, 4 * MiB, 4 * MiB, 4 * MiB};
    for (int i = 0; i < 6; i++) {
        assert_ptr_equal(s.ptrs[i], p);
        assert_int_equal(s.sizes[i], sizes[i]);
    }
}

static void count_live(void *ctx, const void *p, size_t size)
{
    seen *s = ctx;
    s->ptrs[s->n] = p;
    s->sizes[s->n++] = size;
}

/* The leak report's walk: the blocks the program holds, not the cached ones. */
static void test_the_walk_finds_live_blocks_only(void **state)
{
    fixture *x = *state;
    void *a = must_alloc(x, 100, 0);
    void *b = must_alloc(x, MiB, 0);
    assert_int_equal(ca_host_free(x->hp, b), CA_OK);
    seen s = {0};
    ca_host_foreach_live(x->hp, count_live, &s);
    assert_int_equal(s.n, 1);
    assert_ptr_equal(s.ptrs[0], a);
    assert_int_equal(s.sizes[0], 100);
    assert_int_equal(ca_host_free(x->hp, a), CA_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_freed_block_is_reused_after_a_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flags_are_never_mixed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sizes_round_to_a_class, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_frees_are_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_wait_returns_the_block, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_gone_owner_takes_its_blocks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_owner_gone_during_the_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusal_unpins_the_cache_then_tries_the_exact_size,
                                        setup_small, teardown),
        cmocka_unit_test_setup_teardown(test_the_limit_counts_live_and_cached_memory,
                                        setup_limited, teardown),
        cmocka_unit_test_setup_teardown(test_a_live_block_answers_its_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_counters_in_a_devices_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals_are_counted, setup_limited, teardown),
        cmocka_unit_test(test_the_timeline_has_every_call),
        cmocka_unit_test_setup_teardown(test_the_walk_finds_live_blocks_only, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
