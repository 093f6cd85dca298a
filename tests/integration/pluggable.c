/* PyTorch's pluggable allocator as PyTorch drives it: the library is opened with
 * dlopen(RTLD_LOCAL) (ctypes.CDLL), the two entry points found with dlsym, a block allocated
 * for the current device and stream, used on that stream, and freed on the stream it was
 * allocated on. Blocks come from the cache and count in its statistics; `device` picks the
 * device whatever the current one; bad input answers NULL. With "preloaded" the library is also
 * LD_PRELOADed: the program's own cudaMalloc and the pluggable calls share one cache.
 *   integ-cuda-pluggable LIBCACHEALLOC [preloaded]          (SIMDEV_DEVICES=2) */
#include <sys/types.h>

#include "cachealloc.h"
#include "gpu.h"

#define MiB ((size_t)1 << 20)

typedef void *(*alloc_fn)(ssize_t size, int device, cudaStream_t stream);
typedef void (*free_fn)(void *ptr, ssize_t size, int device, cudaStream_t stream);
typedef int (*stats_fn)(int dev, cachealloc_stats *out, size_t size);

static void *sym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (p == NULL) {
        fprintf(stderr, "%s: %s\n", name, dlerror());
        exit(1);
    }
    return p;
}

static cachealloc_stats stats_of(stats_fn get, int dev)
{
    cachealloc_stats st;
    memset(&st, 0, sizeof st);
    EXPECT(get(dev, &st, sizeof st) == 1);
    return st;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s LIBCACHEALLOC [preloaded]\n", argv[0]);
        return 2;
    }
    int preloaded = argc > 2 && strcmp(argv[2], "preloaded") == 0;
    /* PyTorch has made both devices' primary contexts and works on device 0. */
    CHECK(cudaSetDevice(1));
    CHECK(cudaFree(NULL));
    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(NULL));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));

    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    alloc_fn alloc;
    free_fn release;
    stats_fn stats;
    void *a = sym(h, "cachealloc_pluggable_alloc"), *f = sym(h, "cachealloc_pluggable_free");
    void *g = sym(h, "cachealloc_get_stats_v1");
    memcpy(&alloc, &a, sizeof a);
    memcpy(&release, &f, sizeof f);
    memcpy(&stats, &g, sizeof g);
    struct simdev_counters c0 = sim_counters(-1);

    /* Allocate, use on the stream, free on that stream: reused at once on it. */
    unsigned char *p = alloc((ssize_t)(64 * MiB), 0, s);
    EXPECT(p != NULL);
    unsigned char byte = 0;
    CHECK(cudaMemsetAsync(p, 7, 64 * MiB, s));
    CHECK(cudaMemcpyAsync(&byte, p + 12345, 1, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(byte == 7);
    release(p, (ssize_t)(64 * MiB), 0, s);
    void *q = alloc((ssize_t)(64 * MiB), 0, s);
    EXPECT(q == p);
    release(q, (ssize_t)(64 * MiB), 0, s);
    /* PyTorch's default stream is the legacy one, NULL. */
    void *r = alloc((ssize_t)MiB, 0, NULL);
    EXPECT(r != NULL);
    CHECK(cudaMemset(r, 1, MiB));
    release(r, (ssize_t)MiB, 0, NULL);

    cachealloc_stats st = stats_of(stats, 0);
    EXPECT(st.alloc_calls == 3 && st.free_calls == 3 && st.cache_hits >= 1);
    EXPECT(st.allocated_bytes == 0 && st.reserved_bytes >= 64 * MiB);
    /* Every driver allocation was the cache's own, counted by both sides alike. */
    struct simdev_counters c1 = sim_counters(-1);
    EXPECT(simdev_allocs(c1) - simdev_allocs(c0) == st.driver_alloc_calls);
    EXPECT(c1.malloc_async_calls == c0.malloc_async_calls);
    /* One or two growths of at most 64 MiB, in pieces of a page (32 a growth at most). */
    EXPECT(st.driver_alloc_calls >= 1 && st.driver_alloc_calls <= 64);

    /* Device 1 while device 0 is current: the block is device 1's, the current device stays. */
    void *d1 = alloc((ssize_t)(4 * MiB), 1, NULL);
    EXPECT(d1 != NULL);
    struct cudaPointerAttributes attr;
    CHECK(cudaPointerGetAttributes(&attr, d1));
    EXPECT(attr.device == 1);
    int cur = -1;
    CHECK(cudaGetDevice(&cur));
    EXPECT(cur == 0);
    EXPECT(stats_of(stats, 1).allocated_bytes == 4 * MiB);
    release(d1, (ssize_t)(4 * MiB), 1, NULL);
    EXPECT(stats_of(stats, 1).allocated_bytes == 0);
    CHECK(cudaGetDevice(&cur));
    EXPECT(cur == 0);

    /* Bad input answers NULL or nothing, and never crashes. */
    EXPECT(alloc(0, 0, s) == NULL);
    EXPECT(alloc(-5, 0, s) == NULL);
    EXPECT(alloc((ssize_t)MiB, 7, s) == NULL);  /* no such device */
    EXPECT(alloc((ssize_t)MiB, -1, s) == NULL);
    EXPECT(alloc((ssize_t)1 << 62, 0, s) == NULL); /* out of memory */
    release(NULL, 0, 0, s);
    void *z = alloc((ssize_t)MiB, 0, s);
    release(z, (ssize_t)MiB, 0, s);
    release(z, (ssize_t)MiB, 0, s); /* a double free is refused, the pool unchanged */
    EXPECT(alloc((ssize_t)MiB, 0, s) == z);
    release(z, (ssize_t)MiB, 0, s);
    CHECK(cudaStreamSynchronize(s));
    st = stats_of(stats, 0);
    EXPECT(st.allocated_bytes == 0);

    /* The program's own allocation: served by the same cache when preloaded, else the real
     * driver's, which the pluggable free hands back to the driver untouched. */
    void *own = NULL;
    CHECK(cudaMalloc(&own, MiB));
    EXPECT(stats_of(stats, 0).alloc_calls == st.alloc_calls + (preloaded ? 1 : 0));
    release(own, (ssize_t)MiB, 0, s);
    CHECK(cudaStreamSynchronize(s));
    struct simdev_counters c2 = sim_counters(-1);
    if (preloaded) {
        EXPECT(stats_of(stats, 0).free_calls == st.free_calls + 1);
    } else {
        EXPECT(c2.free_async_calls == c1.free_async_calls + 1);
        EXPECT(stats_of(stats, 0).free_calls == st.free_calls);
    }
    EXPECT(c2.invalid_frees == c1.invalid_frees + 1); /* the refused double free's probe only */
    CHECK(cudaStreamDestroy(s));
    printf("pluggable allocator ok (%s)\n", preloaded ? "preloaded" : "dlopened only");
    return 0;
}
