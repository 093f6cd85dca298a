/* A context made with cuCtxCreate beside device 0's primary context (driver API). Blocks of the
 * same sizes are allocated and freed in both in turn, plain and stream-ordered, some freed while
 * the other context is current: a block freed in one context is never handed out in the other.
 * Destroying the created context makes the cache forget its segments: the driver's reserved
 * memory drops by what that context held, the primary context goes on from its own cache, and
 * a context created later (it takes the destroyed one's slot) gets none of the dead addresses.
 * No served call, nor a reclaim of another context's segments, changes the calling thread's
 * current context, not even when it has none. */
#include <pthread.h>

#include "cachealloc.h"
#include "gpu.h"

#define ROUNDS 20
#define NSIZES 3
#define MAX_BLOCKS (ROUNDS * NSIZES * 2)

static const size_t sizes[NSIZES] = {4096, 1u << 20, 3u << 20};

/* Every distinct block one context was handed, as [lo, hi). */
struct blocks {
    CUdeviceptr lo[MAX_BLOCKS], hi[MAX_BLOCKS];
    int n;
};

static void note(struct blocks *b, CUdeviceptr p, size_t n)
{
    for (int i = 0; i < b->n; i++)
        if (b->lo[i] == p && b->hi[i] == p + n)
            return;
    EXPECT(b->n < MAX_BLOCKS);
    b->lo[b->n] = p;
    b->hi[b->n++] = p + n;
}

static int overlaps(const struct blocks *b, CUdeviceptr p, size_t n)
{
    for (int i = 0; i < b->n; i++)
        if (p < b->hi[i] && b->lo[i] < p + n)
            return 1;
    return 0;
}

static CUcontext current(void)
{
    CUcontext c = NULL;
    CHECK(cuCtxGetCurrent(&c));
    return c;
}

/* A served call: it succeeds and leaves the thread's current context as it found it. */
#define SERVED(call)                                                                          \
    do {                                                                                      \
        CUcontext was_ = current();                                                           \
        CHECK(call);                                                                          \
        EXPECT(current() == was_);                                                            \
    } while (0)

/* A block of n bytes in ctx (on stream s, or plain when s is NULL), never one the other
 * context was handed, set at once. */
static CUdeviceptr take(CUcontext ctx, struct blocks *mine, const struct blocks *other, size_t n,
                        CUstream s)
{
    CHECK(cuCtxSetCurrent(ctx));
    CUdeviceptr p = 0;
    if (s != NULL)
        SERVED(cuMemAllocAsync(&p, n, s));
    else
        SERVED(cuMemAlloc(&p, n));
    if (overlaps(other, p, n)) {
        fprintf(stderr, "block 0x%llx (%zu bytes) belongs to the other context\n",
                (unsigned long long)p, n);
        exit(1);
    }
    note(mine, p, n);
    CHECK(cuMemsetD8Async(p, 0x5A, n, s));
    return p;
}

/* Device memory the cache holds, over every context. */
static uint64_t cache_reserved(int only_slot)
{
    uint64_t sum = 0;
    cachealloc_stats st;
    for (int d = 0; d < 256; d++)
        if ((only_slot < 0 || d == only_slot) && cachealloc_get_stats(d, &st))
            sum += st.reserved_bytes;
    return sum;
}

static void *reclaim_without_context(void *unused)
{
    (void)unused;
    EXPECT(current() == NULL);
    EXPECT(cachealloc_reclaim(-1) > 0);
    EXPECT(current() == NULL);
    return NULL;
}

static void round_in_both(CUcontext prim, CUcontext made, CUstream sp, CUstream sm,
                          struct blocks *in_prim, struct blocks *in_made, int r)
{
    for (int i = 0; i < NSIZES; i++) {
        int async = (r + i) & 1;
        CUdeviceptr a = take(prim, in_prim, in_made, sizes[i], async ? sp : NULL);
        if (async)
            SERVED(cuMemFreeAsync(a, sp));
        else
            SERVED(cuMemFree(a)); /* freed in the primary context, now the cache's */
        CUdeviceptr b = take(made, in_made, in_prim, sizes[i], async ? sm : NULL);
        if (async) {
            SERVED(cuMemFreeAsync(b, sm));
        } else {
            CHECK(cuCtxSetCurrent(prim)); /* the cache frees in b's own context, and comes back */
            SERVED(cuMemFree(b));
        }
    }
    size_t f, t;
    CHECK(cuCtxSetCurrent(made));
    SERVED(cuMemGetInfo(&f, &t));
    SERVED(cuCtxSynchronize());
    CHECK(cuCtxSetCurrent(prim));
    SERVED(cuMemGetInfo(&f, &t));
    SERVED(cuCtxSynchronize());
}

int main(void)
{
    static struct blocks in_prim, in_made, in_later;
    CUdevice dev;
    CUcontext prim, made, later;
    CUstream sp, sm;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&prim, dev));
    CHECK(cuCtxSetCurrent(prim));
    SERVED(cuStreamCreate(&sp, CU_STREAM_NON_BLOCKING));
    CHECK(cuCtxCreate(&made, NULL, 0, dev));
    SERVED(cuStreamCreate(&sm, CU_STREAM_NON_BLOCKING));

    uint64_t mallocs = 0;
    for (int r = 0; r < ROUNDS; r++) {
        round_in_both(prim, made, sp, sm, &in_prim, &in_made, r);
        if (r == 1)
            mallocs = simdev_allocs(sim_counters(0));
    }
    /* The later rounds were served from each context's own cache. A round's stream work may
     * still run when the next round allocates, and the budget of pending memory lets the cache
     * grow rather than wait then (docs/arena.md): on a loaded machine that happens now and
     * then, at most once per context and size. A cache that did not reuse would ask 108 times. */
    EXPECT(simdev_allocs(sim_counters(0)) - mallocs <= 2 * NSIZES);
    mallocs = simdev_allocs(sim_counters(0));

    CHECK(cuCtxSetCurrent(made));
    SERVED(cuStreamDestroy(sm));
    CHECK(cuCtxSetCurrent(prim));
    uint64_t reserved = sim_counters(0).reserved_bytes, held_prim = cache_reserved(0);
    uint64_t held_made = cache_reserved(-1) - held_prim;
    printf("reserved %llu bytes: primary context %llu, created context %llu\n",
           (unsigned long long)reserved, (unsigned long long)held_prim,
           (unsigned long long)held_made);
    EXPECT(reserved == held_prim + held_made); /* every block is freed: the cache holds it all */
    EXPECT(held_prim > 0 && held_made > 0);
    SERVED(cuCtxDestroy(made));
    printf("after cuCtxDestroy: reserved %llu bytes, cache %llu\n",
           (unsigned long long)sim_counters(0).reserved_bytes,
           (unsigned long long)cache_reserved(-1));
    EXPECT(sim_counters(0).reserved_bytes == reserved - held_made);
    EXPECT(cache_reserved(-1) == held_prim);

    /* The primary context goes on from its own cache. */
    for (int i = 0; i < NSIZES; i++)
        SERVED(cuMemFree(take(prim, &in_prim, &in_made, sizes[i], NULL)));
    SERVED(cuCtxSynchronize());
    EXPECT(simdev_allocs(sim_counters(0)) == mallocs);

    /* A new context is handed none of the destroyed one's blocks. */
    CHECK(cuCtxCreate(&later, NULL, 0, dev));
    for (int i = 0; i < NSIZES; i++)
        SERVED(cuMemFree(take(later, &in_later, &in_made, sizes[i], NULL)));
    SERVED(cuCtxSynchronize());

    /* The cache releases the primary context's segments in that context, and comes back. */
    EXPECT(cachealloc_reclaim(0) == held_prim);
    EXPECT(current() == later);
    CHECK(cuCtxSetCurrent(prim));
    SERVED(cuCtxDestroy(later));
    SERVED(cuStreamDestroy(sp));

    /* A thread without a current context has none after a reclaim either. */
    SERVED(cuMemFree(take(prim, &in_prim, &in_made, sizes[0], NULL)));
    SERVED(cuCtxSynchronize());
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, reclaim_without_context, NULL) == 0);
    EXPECT(pthread_join(t, NULL) == 0);

    struct simdev_counters c = sim_counters(0);
    printf("after reclaim: reserved %llu bytes, %llu invalid frees, %llu faults\n",
           (unsigned long long)c.reserved_bytes, (unsigned long long)c.invalid_frees,
           (unsigned long long)c.faults);
    EXPECT(c.reserved_bytes == 0 && c.invalid_frees == 0 && c.faults == 0);
    return 0;
}
