/* Shared by the library programs of scripts/gpu-check.sh: each calls one CUDA library on
 * memory from cudaMalloc, 20 rounds of allocate, compute, copy back, free, and prints a checksum
 * that must be the same with the cache and without it. */
#ifndef CA_GPU_LIBCHECK_H
#define CA_GPU_LIBCHECK_H

#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 20

/* Exit 1 with the failing call's text and code when st is not the library's success (0). */
#define LIBCHECK(call)                                                                        \
    do {                                                                                      \
        long st_ = (long)(call);                                                              \
        if (st_ != 0) {                                                                       \
            fprintf(stderr, "%s:%d: %s returned %ld\n", __FILE__, __LINE__, #call, st_);      \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

/* The sum of n floats copied back from the device, in double: identical runs, identical sums. */
static inline double device_sum(const float *dev, size_t n)
{
    float *h = malloc(n * sizeof *h);
    if (h == NULL)
        exit(1);
    LIBCHECK(cudaMemcpy(h, dev, n * sizeof *h, cudaMemcpyDeviceToHost));
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += h[i];
    free(h);
    return s;
}

/* Fill n floats on the device with a pattern that depends on round r only. */
static inline void device_fill(float *dev, size_t n, int r)
{
    float *h = malloc(n * sizeof *h);
    if (h == NULL)
        exit(1);
    for (size_t i = 0; i < n; i++)
        h[i] = (float)((i * 7 + (size_t)r * 13) % 101) / 101.0f - 0.5f;
    LIBCHECK(cudaMemcpy(dev, h, n * sizeof *h, cudaMemcpyHostToDevice));
    free(h);
}

#endif
