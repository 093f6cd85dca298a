/* What the GPU check's probes share: a clock, the median of timings, and the driver's entry
 * points looked up by name (the probes load the driver with dlopen, so that they find the real
 * one on a GPU machine and the simulated one here). */
#ifndef CACHEALLOC_TESTS_GPU_PROBE_UTIL_H
#define CACHEALLOC_TESTS_GPU_PROBE_UTIL_H

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Microseconds of the monotonic clock. */
static inline double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static inline int by_value(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The median of n timings (sorts v). */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return v[n / 2];
}

/* The entry point `name` of lib; a line saying it is missing and exit 1 where there is none. */
static inline void *probe_sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (p == NULL) {
        printf("missing=%s\n", name);
        exit(1);
    }
    return p;
}

#define LOAD(var, name) memcpy(&var, &(void *){probe_sym(lib, name)}, sizeof var)
/* Entry points a driver may lack (the simulated one has no exports): NULL, and said so. */
#define LOAD_OPTIONAL(var, name) memcpy(&var, &(void *){dlsym(lib, name)}, sizeof var)

/* The driver (libcuda.so.1), with device 0's primary context current on the calling thread; a
 * line saying what is missing, and exit 1, where there is none. */
static inline void *probe_open(CUdevice *dev, CUcontext *ctx)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (lib == NULL) {
        printf("no libcuda.so.1\n");
        exit(1);
    }
    CUresult (*init)(unsigned);
    CUresult (*get)(CUdevice *, int);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*set)(CUcontext);
    LOAD(init, "cuInit");
    LOAD(get, "cuDeviceGet");
    LOAD(retain, "cuDevicePrimaryCtxRetain");
    LOAD(set, "cuCtxSetCurrent");
    if (init(0) != CUDA_SUCCESS || get(dev, 0) != CUDA_SUCCESS ||
        retain(ctx, *dev) != CUDA_SUCCESS || set(*ctx) != CUDA_SUCCESS) {
        printf("no device\n");
        exit(1);
    }
    return lib;
}

#endif
