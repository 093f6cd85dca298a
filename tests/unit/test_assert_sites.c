/* The cheap checks where the work is done (src/base/ca_assert.h) fire: each test breaks one
 * invariant on purpose behind the arena's back, in a child process, and the child must die of
 * SIGABRT having named the check it failed, its file and its condition. The sites: the free
 * index's insert and remove (src/block/bins.c), the live map's put (src/block/map.h), and the
 * thread cache's keep and reissue (src/tcache/hit.h, with ca_tc_check_block in
 * src/tcache/tcache.c). The first tests show the same operations, unbroken, pass their checks.
 * Built only where the checks are compiled in. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "arena_fixture.h"
#include "tcache/hit.h"
#include "arena/internal.h"
#include "base/ca_assert.h"

/* Runs breaker() in a child whose stderr comes back here: it must be stopped by a broken
 * invariant in `file` whose condition contains `cond`. */
static void expect_broken(void (*breaker)(void), const char *file, const char *cond)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGABRT, SIG_DFL);
        dup2(fd[1], STDERR_FILENO);
        close(fd[0]);
        close(fd[1]);
        breaker();
        _exit(0); /* nothing stopped it */
    }
    close(fd[1]);
    char out[4096];
    size_t n = 0;
    ssize_t got;
    while (n < sizeof out - 1 && (got = read(fd[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)got;
    out[n] = '\0';
    close(fd[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT || !strstr(out, file) ||
        !strstr(out, cond))
        print_error("wanted a broken invariant in %s: %s\nthe child (status %#x) said: %s\n",
                    file, cond, status, out);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    assert_non_null(strstr(out, "cachealloc: invariant broken at "));
    assert_non_null(strstr(out, file));
    assert_non_null(strstr(out, cond));
}

/* ------------------------------------------------------------------ the free index (bins) */

#define UNITS(n) ((size_t)(n) * 512u)

static ca_bins bins, other;
static ca_block x, y;

static void blocks_free(void)
{
    memset(&bins, 0, sizeof bins);
    memset(&other, 0, sizeof other);
    x = (ca_block){.addr = 0x10000, .size = UNITS(4), .state = BLOCK_FREE};
    y = (ca_block){.addr = 0x20000, .size = UNITS(4), .state = BLOCK_FREE};
}

static void test_bins_intact(void **state)
{
    (void)state;
    blocks_free();
    ca_bins_insert(&bins, &x);
    ca_bins_insert(&bins, &y);
    ca_bins_remove(&bins, &x);
    ca_bins_insert(&bins, &x);
    ca_bins_remove(&bins, &y);
    ca_bins_remove(&bins, &x);
    assert_int_equal(bins.count, 0);
    assert_int_equal(bins.level_map, 0);
}

static void insert_allocated(void)
{
    blocks_free();
    x.state = BLOCK_ALLOC;
    ca_bins_insert(&bins, &x);
}

static void insert_twice(void)
{
    blocks_free();
    ca_bins_insert(&bins, &x);
    ca_bins_insert(&bins, &x); /* alone in its class: no link shows it, the head does */
}

static void insert_still_linked(void)
{
    blocks_free();
    x.lnext = &y; /* still on another list (pending, fast, holes) */
    ca_bins_insert(&bins, &x);
}

static void test_bins_insert(void **state)
{
    (void)state;
    expect_broken(insert_allocated, "block/bins.c:", "blk->state == BLOCK_FREE");
    expect_broken(insert_twice, "block/bins.c:", "b->head[cls] != blk");
    expect_broken(insert_still_linked, "block/bins.c:", "!blk->lprev && !blk->lnext");
}

static void remove_resized(void)
{
    blocks_free();
    ca_bins_insert(&bins, &x);
    x.size = UNITS(5); /* grown while indexed: in the class of its old size */
    ca_bins_remove(&bins, &x);
}

static void remove_from_other_index(void)
{
    blocks_free();
    ca_bins_insert(&bins, &x);
    ca_bins_remove(&other, &x);
}

static void remove_broken_link(void)
{
    blocks_free();
    ca_bins_insert(&bins, &y);
    ca_bins_insert(&bins, &x); /* x, then y */
    y.lprev = NULL;
    ca_bins_remove(&bins, &x);
}

static void remove_uncounted(void)
{
    blocks_free();
    ca_bins_insert(&bins, &x);
    bins.bytes = UNITS(1);
    ca_bins_remove(&bins, &x);
}

static void remove_allocated(void)
{
    blocks_free();
    ca_bins_insert(&bins, &x);
    x.state = BLOCK_ALLOC; /* handed out without leaving the index */
    ca_bins_remove(&bins, &x);
}

static void test_bins_remove(void **state)
{
    (void)state;
    expect_broken(remove_resized, "block/bins.c:", "cls == ca_bin_of(blk->size)");
    expect_broken(remove_allocated, "block/bins.c:", "blk->state == BLOCK_FREE");
    expect_broken(remove_from_other_index, "block/bins.c:", "b->head[cls] == blk");
    expect_broken(remove_broken_link, "block/bins.c:", "blk->lnext->lprev == blk");
    expect_broken(remove_uncounted, "block/bins.c:", "b->bytes >= blk->size");
}

/* -------------------------------------------------------------------------- the live map */

static ca_map map;

static void test_map_intact(void **state)
{
    (void)state;
    ca_map m = {0};
    /* More than the first table holds, so the puts grow it and probe past taken buckets. */
    for (uintptr_t k = 1; k <= 200; k++)
        assert_int_equal(ca_map_put(&m, k << 9, &x), 0);
    assert_int_equal(m.count, 200);
    assert_ptr_equal(ca_map_take(&m, (uintptr_t)7 << 9), &x);
    assert_int_equal(ca_map_put(&m, (uintptr_t)7 << 9, &y), 0);
    assert_ptr_equal(ca_map_get(&m, (uintptr_t)7 << 9), &y);
    ca_map_free(&m);
}

static void put_twice(void)
{
    memset(&map, 0, sizeof map);
    for (uintptr_t k = 1; k <= 40; k++) /* a crowded table: the second put probes past others */
        ca_map_put(&map, k << 9, &x);
    ca_map_put(&map, (uintptr_t)17 << 9, &y);
}

static void put_empty_key(void)
{
    memset(&map, 0, sizeof map);
    ca_map_put(&map, 0, &x);
}

static void put_no_block(void)
{
    memset(&map, 0, sizeof map);
    ca_map_put(&map, 0x200, NULL);
}

static void test_map_put(void **state)
{
    (void)state;
    expect_broken(put_twice, "block/map.h:", "m->keys[s] != key");
    expect_broken(put_empty_key, "block/map.h:", "key != 0 && val != NULL");
    expect_broken(put_no_block, "block/map.h:", "key != 0 && val != NULL");
}

/* ------------------------------------------------------------------------ the thread cache */

static fixture *f;
static ca_tcache *tc;

/* A thread-cached arena, and a block of 1 MiB it handed this thread: returns it, with its
 * struct in *b. */
static char *issued(ca_block **b)
{
    f = fx_start_tcache(8 * GiB);
    tc = ca_tc_thread_cache(f->a);
    char *p = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    *b = ca_map_get(&f->a->dev[0]->live, (uintptr_t)p);
    assert_non_null(*b);
    return p;
}

/* The same, then freed and kept by this thread's cache. */
static char *kept(ca_block **b)
{
    char *p = issued(b);
    assert_true(ca_free_hit(tc, p, NULL, CA_API_PLAIN, 0));
    return p;
}

static void test_tcache_intact(void **state)
{
    (void)state;
    ca_block *b;
    char *p = kept(&b);
    void *q = NULL;
    assert_true(ca_malloc_hit(tc, 0, MiB, NULL, CA_API_PLAIN, &q)); /* the inline hit */
    assert_ptr_equal(q, p);
    must_free(f, p, NULL, CA_API_PLAIN); /* ca_tc_keep */
    assert_ptr_equal(must_alloc(f, MiB, NULL, CA_API_PLAIN), p); /* ca_tc_take */
    must_free(f, p, NULL, CA_API_PLAIN);
    fx_finish(f);
}

static void keep_kept_elsewhere(void)
{
    ca_block *b;
    char *p = issued(&b);
    __atomic_store_n(&b->head.kept, 1, __ATOMIC_RELAXED); /* as if another cache kept it */
    ca_free_hit(tc, p, NULL, CA_API_PLAIN, 0);
}

static void keep_wrong_entry(void)
{
    ca_block *b;
    char *p = issued(&b);
    size_t at = ca_tc_entry_index((uintptr_t)p);
    ca_tc_keep_entry(tc, &tc->table[at], (at + 1) % CA_TC_ISSUED);
}

static void keep_freed_by_pools(void)
{
    ca_block *b;
    char *p = issued(&b);
    b->state = BLOCK_FREE; /* freed behind the cache's back, its gen left as it was */
    must_free(f, p, NULL, CA_API_PLAIN); /* through ca_free: ca_tc_keep */
}

static void keep_other_device(void)
{
    ca_block *b;
    char *p = issued(&b);
    tc->table[ca_tc_entry_index((uintptr_t)p)].dev = 1; /* but its device is 0's */
    must_free(f, p, NULL, CA_API_PLAIN);
}

static void keep_shrunk(void)
{
    ca_block *b;
    char *p = issued(&b);
    b->size = UNITS(1); /* smaller than what was asked */
    ca_free_hit(tc, p, NULL, CA_API_PLAIN, 0);
}

static void test_tcache_keep(void **state)
{
    (void)state;
    expect_broken(keep_kept_elsewhere, "tcache/hit.h:", "ca_block_head_of(e->b)->kept");
    expect_broken(keep_wrong_entry, "tcache/hit.h:", "e == &tc->table[at]");
    expect_broken(keep_freed_by_pools, "tcache/tcache.c:", "b->state == BLOCK_ALLOC");
    expect_broken(keep_other_device, "tcache/tcache.c:", "e->d->id == e->dev");
    expect_broken(keep_shrunk, "tcache/tcache.c:", "b->size >= e->requested");
}

static void reissue_given_back(void)
{
    ca_block *b;
    kept(&b);
    __atomic_store_n(&b->head.kept, 0, __ATOMIC_RELAXED); /* as the pools unmark a block */
    void *q;
    ca_malloc_hit(tc, 0, MiB, NULL, CA_API_PLAIN, &q);
}

static void reissue_gen_moved(void)
{
    ca_block *b;
    kept(&b);
    __atomic_add_fetch(&b->head.gen, 1, __ATOMIC_RELAXED); /* as a free by the pools moves it */
    must_alloc(f, MiB, NULL, CA_API_PLAIN); /* through ca_malloc: ca_tc_take */
}

static void reissue_past_kept(void)
{
    ca_block *b;
    kept(&b);
    ca_tc_reissue(tc, tc->nkept);
}

static void reissue_moved(void)
{
    ca_block *b;
    kept(&b);
    b->addr += MiB; /* not where it was handed out */
    void *q;
    ca_malloc_hit(tc, 0, MiB, NULL, CA_API_PLAIN, &q);
}

static void test_tcache_reissue(void **state)
{
    (void)state;
    expect_broken(reissue_given_back, "tcache/hit.h:", "e->is_kept && __atomic_load_n");
    expect_broken(reissue_gen_moved, "tcache/hit.h:", "->gen, __ATOMIC_RELAXED) == e->gen");
    expect_broken(reissue_past_kept, "tcache/hit.h:", "i < tc->nkept");
    expect_broken(reissue_moved, "tcache/tcache.c:", "b->addr == e->addr");
}

/* --------------------------------------------------------------------- the expensive tier */

static void expensive_fails(void)
{
    ca_assert_expensive(sizeof(int) == 0);
}

/* Test builds check the expensive tier too (the whole-device walk: test device-check-*). */
static void test_expensive_tier_on(void **state)
{
    (void)state;
    assert_int_equal(CA_ASSERT_EXPENSIVE, 1);
    expect_broken(expensive_fails, "test_assert_sites.c:", "sizeof(int) == 0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bins_intact),
        cmocka_unit_test(test_map_intact),
        cmocka_unit_test(test_tcache_intact),
        cmocka_unit_test(test_bins_insert),
        cmocka_unit_test(test_bins_remove),
        cmocka_unit_test(test_map_put),
        cmocka_unit_test(test_tcache_keep),
        cmocka_unit_test(test_tcache_reissue),
        cmocka_unit_test(test_expensive_tier_on),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
