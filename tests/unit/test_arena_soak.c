/* Randomized soak of the arena against the fake device. After every operation: reserved =
 * allocated + cached + pending, no two live blocks overlap, and no allocation receives memory
 * that work on another stream may still use (a model of the reuse contract, independent of
 * the arena's own bookkeeping). With expandable segments, the fake also sees every page used
 * without memory behind it or unmapped under running work. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "arena/arena.h"
#include "fake_backend.h"

#define MiB ((size_t)1 << 20)
#define NSTREAMS 4
#define MAX_LIVE 400
#define MAX_HAZARDS 20000

typedef struct live {
    uintptr_t addr;
    size_t size;
    int stream;  /* allocating stream index, -1: plain API */
} live;

/* Memory used by work that may still run: [addr, addr+size) was used by work on `stream` up to
 * its `seq`-th item (plain frees: by every stream up to seqs[]). */
typedef struct hazard {
    uintptr_t addr;
    size_t size;
    int stream;  /* -1: every stream (a plain free) */
    uint64_t seqs[NSTREAMS + 1];
} hazard;

static fake_device dev;
static ca_backend be;
static ca_arena *arena;
static ca_stream_t streams[NSTREAMS + 1]; /* [0] is the legacy stream */
static int generation;
static live lives[MAX_LIVE];
static int nlive;
static hazard hazards[MAX_HAZARDS];
static int nhazards;
static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static size_t random_size(void)
{
    uint64_t r = rnd() % 100;
    if (r < 70)
        return 1 + rnd() % (64 * 1024);
    if (r < 95)
        return 1 + rnd() % (8 * MiB);
    return 1 + rnd() % (48 * MiB);
}

static int hazard_done(const hazard *h)
{
    if (h->stream >= 0)
        return fake_done(&dev, streams[h->stream], h->seqs[h->stream]);
    for (int i = 0; i <= NSTREAMS; i++)
        if (!fake_done(&dev, streams[i], h->seqs[i]))
            return 0;
    return 1;
}

static void prune_hazards(void)
{
    int k = 0;
    for (int i = 0; i < nhazards; i++)
        if (!hazard_done(&hazards[i]))
            hazards[k++] = hazards[i];
    nhazards = k;
}

static void check_new_block(uintptr_t addr, size_t size, int stream)
{
    for (int i = 0; i < nlive; i++)
        if (addr < lives[i].addr + lives[i].size && lives[i].addr < addr + size)
            fail_msg("block %#lx+%zu overlaps live block %#lx+%zu", (unsigned long)addr, size,
                     (unsigned long)lives[i].addr, lives[i].size);
    for (int i = 0; i < nhazards; i++) {
        hazard *h = &hazards[i];
        if (!(addr < h->addr + h->size && h->addr < addr + size))
            continue;
        /* Same stream: stream order protects an async allocation. */
        if (h->stream >= 0 && h->stream == stream)
            continue;
        if (!hazard_done(h))
            fail_msg("block %#lx+%zu for stream %d still in use by stream %d", (unsigned long)addr,
                     size, stream, h->stream);
    }
}

static void check_balance(void)
{
    ca_dev_stats st;
    assert_int_equal(ca_get_stats(arena, 0, &st), 1);
    assert_int_equal(st.reserved_bytes, st.allocated_bytes + st.cached_bytes + st.pending_bytes);
}

static void do_alloc(int stream)
{
    if (nlive == MAX_LIVE)
        return;
    size_t size = random_size();
    void *p = NULL;
    if (rnd() % 50 == 0) /* a transient driver failure the ladder must absorb */
        dev.fail_next_allocs = dev.fail_next_creates = 1;
    ca_status rc = ca_malloc(arena, 0, size, stream < 0 ? NULL : streams[stream],
                             stream < 0 ? CA_API_PLAIN : CA_API_ASYNC, &p);
    dev.fail_next_allocs = dev.fail_next_creates = 0;
    if (rc == CA_ERR_OOM)
        return;
    assert_int_equal(rc, CA_OK);
    check_new_block((uintptr_t)p, size, stream);
    assert_int_not_equal(fake_mapped(&dev, p, size), 0);
    lives[nlive++] = (live){(uintptr_t)p, size, stream};
}

static void do_free(void)
{
    if (!nlive)
        return;
    int i = (int)(rnd() % (uint64_t)nlive);
    live l = lives[i];
    lives[i] = lives[--nlive];
    hazard h = {l.addr, l.size, -1, {0}};
    uint64_t how = rnd() % 10;
    ca_status rc;
    if (l.stream >= 0 && how < 7) {
        /* Used on its stream, freed there. */
        fake_use(&dev, streams[l.stream], (void *)l.addr, l.size);
        h.stream = l.stream;
        h.seqs[l.stream] = fake_enqueued(&dev, streams[l.stream]);
        rc = ca_free(arena, (void *)l.addr, streams[l.stream], CA_API_ASYNC, NULL);
    } else if (how < 8) {
        /* Used and freed on another stream. */
        int s = 1 + (int)(rnd() % NSTREAMS);
        fake_use(&dev, streams[s], (void *)l.addr, l.size);
        h.stream = s;
        h.seqs[s] = fake_enqueued(&dev, streams[s]);
        rc = ca_free(arena, (void *)l.addr, streams[s], CA_API_ASYNC, NULL);
    } else {
        /* Used anywhere, freed with the plain API. */
        fake_use(&dev, streams[rnd() % (NSTREAMS + 1)], (void *)l.addr, l.size);
        for (int s = 0; s <= NSTREAMS; s++)
            h.seqs[s] = fake_enqueued(&dev, streams[s]);
        rc = ca_free(arena, (void *)l.addr, NULL, CA_API_PLAIN, NULL);
    }
    assert_int_equal(rc, CA_OK);
    if (nhazards == MAX_HAZARDS)
        prune_hazards();
    if (nhazards < MAX_HAZARDS)
        hazards[nhazards++] = h;
}

static void replace_stream(void)
{
    int s = 1 + (int)(rnd() % NSTREAMS);
    ca_stream_destroyed(arena, 0, streams[s]);
    /* A new stream with a fresh handle takes the slot once the old one's work is done, so
     * that hazards can keep naming streams by slot. */
    fake_complete(&dev, streams[s]);
    prune_hazards();
    for (int i = 0; i < nhazards; i++)
        hazards[i].seqs[s] = 0; /* the old stream's part is done; the new one starts at 0 */
    generation++;
    streams[s] = (ca_stream_t)(uintptr_t)(0x100000 * (uintptr_t)generation + (uintptr_t)s);
    ca_stream_created(arena, 0, streams[s], 1);
}

static void soak(ca_reuse_kind reuse, uint64_t max_split, int expandable, int ops)
{
    fake_init(&dev, &be, 1ull << 31);
    ca_config cfg = {.pool = CA_POOL_SPLIT, .reuse = reuse, .release_threshold = UINT64_MAX,
                     .max_split = max_split, .expandable = expandable, .quiet = 1};
    arena = ca_arena_create(&be, &cfg);
    streams[0] = NULL;
    for (int s = 1; s <= NSTREAMS; s++) {
        streams[s] = (ca_stream_t)(uintptr_t)(0x1000 * s);
        ca_stream_created(arena, 0, streams[s], 1);
    }
    nlive = nhazards = 0;
    for (int op = 0; op < ops; op++) {
        uint64_t r = rnd() % 1000;
        if (r < 250)
            do_alloc(-1);
        else if (r < 500)
            do_alloc((int)(rnd() % NSTREAMS) + 1);
        else if (r < 900)
            do_free();
        else if (r < 980)
            fake_complete(&dev, streams[rnd() % (NSTREAMS + 1)]);
        else if (r < 990) {
            uint64_t t = ca_device_sync_begin(arena, 0);
            fake_complete_all(&dev);
            ca_device_synchronized(arena, 0, t);
        } else if (r < 995) {
            replace_stream();
        } else if (r < 998) {
            ca_reclaim(arena, 0);
        } else {
            prune_hazards();
        }
        check_balance();
        if (dev.violations)
            fail_msg("operation %d: %s", op, dev.violation);
    }
    while (nlive)
        do_free();
    fake_complete_all(&dev);
    ca_reclaim(arena, -1);
    ca_dev_stats st;
    ca_get_stats(arena, 0, &st);
    assert_int_equal(st.allocated_bytes, 0);
    assert_int_equal(st.pending_bytes, 0);
    assert_int_equal(st.reserved_bytes, 0);
    assert_int_equal(dev.nlive, 0);
    assert_int_equal(dev.mapped_bytes, 0);
    ca_arena_destroy(arena);
    assert_int_equal(dev.reserves, dev.va_frees);
    assert_int_equal(dev.used, 0);
    assert_int_equal(dev.violations, 0);
    if (expandable)
        assert_true(dev.maps > 0 && dev.unmaps > 0);
}

static int ops_from_env(void)
{
    const char *s = getenv("CACHEALLOC_SOAK_OPS");
    return s && atoi(s) > 0 ? atoi(s) : 60000;
}

static void test_soak_safe(void **state)
{
    (void)state;
    const char *seed = getenv("CACHEALLOC_SOAK_SEED");
    if (seed && strtoull(seed, NULL, 10))
        rng = strtoull(seed, NULL, 10);
    soak(CA_REUSE_SAFE, UINT64_MAX, 0, ops_from_env());
}

static void test_soak_safe_max_split(void **state)
{
    (void)state;
    soak(CA_REUSE_SAFE, 32 * MiB, 0, ops_from_env() / 2);
}

static void test_soak_safe_expandable(void **state)
{
    (void)state;
    soak(CA_REUSE_SAFE, UINT64_MAX, 1, ops_from_env());
}

/* The model is able to see a race: the unsafe contract, fed the same traffic, must trip it. */
static void test_model_catches_unsafe_reuse(void **state)
{
    (void)state;
    fake_init(&dev, &be, 1ull << 31);
    ca_config cfg = {.pool = CA_POOL_SPLIT, .reuse = CA_REUSE_STREAM,
                     .release_threshold = UINT64_MAX, .max_split = UINT64_MAX, .quiet = 1};
    arena = ca_arena_create(&be, &cfg);
    streams[0] = NULL;
    streams[1] = (ca_stream_t)0x1000;
    ca_stream_created(arena, 0, streams[1], 1);
    nlive = nhazards = 0;
    void *p;
    assert_int_equal(ca_malloc(arena, 0, MiB, NULL, CA_API_PLAIN, &p), CA_OK);
    lives[nlive++] = (live){(uintptr_t)p, MiB, -1};
    fake_work(&dev, streams[1]);
    hazards[nhazards++] = (hazard){(uintptr_t)p, MiB, 1, {0, fake_enqueued(&dev, streams[1])}};
    nlive = 0;
    assert_int_equal(ca_free(arena, p, NULL, CA_API_PLAIN, NULL), CA_OK);
    void *q;
    assert_int_equal(ca_malloc(arena, 0, MiB, NULL, CA_API_PLAIN, &q), CA_OK);
    assert_ptr_equal(q, p);
    int clash = 0;
    for (int i = 0; i < nhazards; i++)
        if ((uintptr_t)q < hazards[i].addr + hazards[i].size && !hazard_done(&hazards[i]))
            clash = 1;
    assert_true(clash);
    ca_free(arena, q, NULL, CA_API_PLAIN, NULL);
    fake_complete_all(&dev);
    ca_arena_destroy(arena);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_soak_safe),
        cmocka_unit_test(test_soak_safe_max_split),
        cmocka_unit_test(test_soak_safe_expandable),
        cmocka_unit_test(test_model_catches_unsafe_reuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
