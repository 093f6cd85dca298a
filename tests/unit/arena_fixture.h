/* arena_fixture.h: the fixture the arena's unit tests share: an arena over a fake device, with
 * the configuration every test starts from (split pool, safe reuse, keep everything, no limit
 * on splitting, quiet), and the checks and calls they all make. Include after cmocka.h. */
#ifndef ARENA_FIXTURE_H
#define ARENA_FIXTURE_H

#include "arena/arena.h"
#include "fake_backend.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define GiB ((size_t)1 << 30)

#define S1 ((ca_stream_t)0x1000)
#define S2 ((ca_stream_t)0x2000)

typedef struct fixture {
    fake_device dev;
    ca_backend be;
    ca_config cfg;
    ca_arena *a;
} fixture;

/* A fixture over a fake device of capacity bytes; the test may adjust cfg before fx_start. */
static inline fixture *fx_new(uint64_t capacity)
{
    fixture *f = test_calloc(1, sizeof *f);
    fake_init(&f->dev, &f->be, capacity);
    f->cfg.pool = CA_POOL_SPLIT;
    f->cfg.reuse = CA_REUSE_SAFE;
    f->cfg.release_threshold = UINT64_MAX;
    f->cfg.max_split = UINT64_MAX;
    f->cfg.quiet = 1;
    return f;
}

/* Creates the arena with the fixture's configuration. */
static inline void fx_start(fixture *f)
{
    f->a = ca_arena_create(&f->be, &f->cfg);
}

/* Checks every invariant of the arena as the test left it (arena/check.c), destroys it, checks
 * that everything it took from the device went back, and frees f. */
static inline void fx_finish(fixture *f)
{
    ca_arena_check(f->a);
    ca_arena_destroy(f->a);
    assert_int_equal(f->dev.nlive, 0);
    test_free(f);
}

/* An arena with thread caches over a device of capacity bytes. */
static inline fixture *fx_start_tcache(uint64_t capacity)
{
    fixture *f = fx_new(capacity);
    f->cfg.thread_cache = 1;
    fx_start(f);
    return f;
}

/* cmocka setup and teardown of an arena with thread caches over an 8 GiB device. */
static inline int fx_setup_tcache(void **state)
{
    *state = fx_start_tcache(8 * GiB);
    return 0;
}

static inline int fx_teardown(void **state)
{
    fx_finish(*state);
    return 0;
}

/* A test run on its own fx_setup_tcache arena. */
#define FX_TCACHE_TEST(fn) cmocka_unit_test_setup_teardown(fn, fx_setup_tcache, fx_teardown)

/* Device 0's counters. */
static inline ca_dev_stats stats(fixture *f)
{
    ca_dev_stats st = {0};
    ca_get_stats(f->a, 0, &st);
    return st;
}

/* reserved = allocated + cached + pending; and, with assertions on, every other invariant
 * (ca_get_stats checks them all, arena/check.c). */
static inline void assert_balanced(fixture *f)
{
    ca_dev_stats st = stats(f);
    assert_int_equal(st.reserved_bytes, st.allocated_bytes + st.cached_bytes + st.pending_bytes);
}

/* An allocation that must succeed. */
static inline void *must_alloc(fixture *f, size_t size, ca_stream_t s, unsigned api)
{
    void *p = NULL;
    assert_int_equal(ca_malloc(f->a, 0, size, s, api, &p), CA_OK);
    assert_non_null(p);
    return p;
}

/* A free that must succeed. */
static inline void must_free(fixture *f, void *p, ca_stream_t s, unsigned api)
{
    assert_int_equal(ca_free(f->a, p, s, api, NULL), CA_OK);
}

#endif
