/* bench-pinned: loops of pinned host memory, as a program staging transfers allocates it.
 *   bench-pinned --loop fixed  [--pairs N]   cudaHostAlloc of 64 MiB, a byte written, cudaFreeHost
 *   bench-pinned --loop random [--pairs N]   1 to 8 MiB (seeded), an asynchronous copy from the
 *                                            buffer to the device on a stream, then its free
 * Prints key=value lines: pairs, seconds, pairs_per_s, and, on the simulated driver, the pinned
 * allocations it made in all and after the first 10% of the pairs (warm-up). Exits 1 when a call
 * fails. Linked with NVIDIA's static runtime, as plain nvcc links. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simdev.h"

#define MIB ((size_t)1 << 20)

#define CHECK(call)                                                                           \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "bench-pinned: %s returned %d\n", #call, (int)e_);                \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The simulator's pinned allocations so far, or -1 off the simulator. */
static long long host_allocs(void)
{
    simdev_get_counters_fn get;
    void *sym = simdev_sym("simdev_get_counters");
    memcpy(&get, &sym, sizeof get);
    struct simdev_counters c;
    memset(&c, 0, sizeof c);
    if (get == NULL || get(-1, &c) != 0)
        return -1;
    return (long long)c.host_allocs;
}

int main(int argc, char **argv)
{
    int random = 0;
    long pairs = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--loop") == 0 && i + 1 < argc) {
            random = strcmp(argv[++i], "random") == 0;
        } else if (strcmp(argv[i], "--pairs") == 0 && i + 1 < argc) {
            char *end;
            pairs = strtol(argv[++i], &end, 10);
            if (*end || pairs <= 0) {
                fprintf(stderr, "bench-pinned: --pairs takes a positive count\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench-pinned --loop fixed|random [--pairs N]\n");
            return 2;
        }
    }
    if (pairs == 0)
        pairs = random ? 2000 : 200;
    cudaStream_t s;
    void *dev = NULL;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMalloc(&dev, 8 * MIB));
    unsigned seed = 12345;
    long warm = pairs / 10;
    long long at_warm = -1, first = host_allocs();
    double t0 = now_s();
    for (long i = 0; i < pairs; i++) {
        if (i == warm)
            at_warm = host_allocs();
        size_t n = 64 * MIB;
        if (random) {
            seed = seed * 1103515245u + 12345u;
            n = MIB + (size_t)(seed >> 8) % (7 * MIB);
        }
        char *p = NULL;
        CHECK(cudaHostAlloc((void **)&p, n, cudaHostAllocDefault));
        p[n - 1] = (char)i;
        if (random)
            CHECK(cudaMemcpyAsync(dev, p, n < 8 * MIB ? n : 8 * MIB, cudaMemcpyHostToDevice, s));
        CHECK(cudaFreeHost(p));
    }
    CHECK(cudaStreamSynchronize(s));
    double dt = now_s() - t0;
    long long last = host_allocs();
    printf("loop=%s\npairs=%ld\nseconds=%.4f\npairs_per_s=%.1f\n", random ? "random" : "fixed",
           pairs, dt, (double)pairs / dt);
    if (first >= 0)
        printf("driver_host_allocs=%lld\ndriver_host_allocs_after_warmup=%lld\n", last - first,
               last - at_warm);
    CHECK(cudaFree(dev));
    CHECK(cudaStreamDestroy(s));
    return 0;
}
