/* A plain CUDA program whose memory test_snapshot.py writes out for PyTorch's viewer: blocks of
 * several pools on two streams, some freed, and the rest still held at the end, when it prints
 * the cache's own figures for device 0 (cachealloc_get_stats). It reclaims once on the way, so
 * that the trace holds segment frees:
 *
 *   reserved_bytes=N allocated_bytes=N live=N
 *
 * SNAPSHOT_HOLD_MS=N: stay alive N ms after printing (to be read live by cachealloc-top). */
#include "cachealloc.h"

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NBLOCKS 9

static int check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    fprintf(stderr, "snapshot_prog: %s: %s\n", what, cudaGetErrorString(e));
    return 1;
}

int main(void)
{
    /* Requests off the 512-byte granule, so that requested and block sizes differ. */
    static const size_t sizes[NBLOCKS] = {1000, 4096, 70000, (3u << 20) + 100, 5000, 300000,
                                          (12u << 20) + 1, 8u << 20, 6u << 20};
    static const int on_side[NBLOCKS] = {0, 0, 0, 0, 1, 1, 1, 0, 0};
    static const int freed[NBLOCKS] = {0, 1, 0, 0, 0, 1, 0, 1, 0};
    void *p[NBLOCKS] = {0};
    cudaStream_t side;
    if (check(cudaFree(NULL), "context") || check(cudaStreamCreate(&side), "cudaStreamCreate"))
        return 1;
    for (int i = 0; i < NBLOCKS; i++) {
        cudaStream_t s = on_side[i] ? side : 0;
        if (check(cudaMallocAsync(&p[i], sizes[i], s), "cudaMallocAsync") ||
            check(cudaMemsetAsync(p[i], i, sizes[i], s), "cudaMemsetAsync"))
            return 1;
    }
    int live = NBLOCKS;
    for (int i = 0; i < NBLOCKS; i++)
        if (freed[i]) {
            if (check(cudaFreeAsync(p[i], on_side[i] ? side : 0), "cudaFreeAsync"))
                return 1;
            live--;
        }
    /* The cache gives back what it can: whole free segments, or an expandable segment's free
     * pages (the trace's segment frees then return parts of what was mapped). */
    if (check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"))
        return 1;
    cachealloc_reclaim(0);
    /* One more, served from what the frees left. */
    void *again = NULL;
    if (check(cudaMalloc(&again, 2000), "cudaMalloc") ||
        check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"))
        return 1;
    live++;
    cachealloc_stats st;
    if (!cachealloc_get_stats(0, &st)) {
        fprintf(stderr, "snapshot_prog: not run under the cache\n");
        return 1;
    }
    printf("reserved_bytes=%llu allocated_bytes=%llu live=%d\n",
           (unsigned long long)st.reserved_bytes, (unsigned long long)st.allocated_bytes, live);
    fflush(stdout);
    const char *hold = getenv("SNAPSHOT_HOLD_MS");
    if (hold && atol(hold) > 0) {
        struct timespec ts = {atol(hold) / 1000, (atol(hold) % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0; /* the live blocks stay held: the trace ends with them */
}
