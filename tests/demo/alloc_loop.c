/* The classic case a caching allocator exists for (AMDGPU.jl's documentation of its caching
 * allocator: a 2 GiB buffer allocated, used and freed 1000 times). Plain CUDA runtime API,
 * compiled against the real headers and linked with the static runtime, as plain nvcc links:
 * it runs the same on a GPU, on the simulated device, and under LD_PRELOAD=libcachealloc.so.
 *
 *   alloc_loop [iterations] [bytes]       (defaults: 1000, 2 GiB)
 *   ALLOC_LOOP_HOLD_MS=N: stay alive N ms after the loop (to be watched by cachealloc-top)
 *   alloc_loop --probe: exit 0 when a CUDA device is usable */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WORK_BYTES (1u << 20) /* the "short piece of work": a memset of the first MiB */

static int check(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    fprintf(stderr, "alloc_loop: %s: %s\n", what, cudaGetErrorString(e));
    return 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--probe") == 0) {
        int n = 0;
        return cudaGetDeviceCount(&n) == cudaSuccess && n > 0 ? 0 : 1;
    }
    long iterations = argc > 1 ? atol(argv[1]) : 1000;
    size_t bytes = argc > 2 ? (size_t)strtoull(argv[2], NULL, 0) : (size_t)2 << 30;
    if (iterations <= 0 || bytes < WORK_BYTES) {
        fprintf(stderr, "usage: alloc_loop [iterations>0] [bytes>=%u]\n", WORK_BYTES);
        return 2;
    }
    if (check(cudaFree(NULL), "context"))
        return 1;
    double t0 = now_s();
    for (long i = 0; i < iterations; i++) {
        void *p = NULL;
        if (check(cudaMalloc(&p, bytes), "cudaMalloc") ||
            check(cudaMemsetAsync(p, (int)(i & 0xff), WORK_BYTES, 0), "cudaMemsetAsync") ||
            check(cudaFree(p), "cudaFree"))
            return 1;
    }
    if (check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"))
        return 1;
    double t = now_s() - t0;
    printf("%ld iterations of %zu bytes: %.3f s\n", iterations, bytes, t);
    fflush(stdout);
    const char *hold = getenv("ALLOC_LOOP_HOLD_MS");
    if (hold && atol(hold) > 0) {
        struct timespec ts = {atol(hold) / 1000, (atol(hold) % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}
