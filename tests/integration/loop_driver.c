/* loop_driver.c: the same loop through the driver API, the way driver-API programs reach it:
 * linked with -lcuda (the entry points bind by name), or, with LOOP_DLOPEN, loading
 * libcuda.so.1 by hand and finding cuGetProcAddress with dlsym, then every function through it
 * (as Numba and ctypes users do). */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <string.h>
#include <dlfcn.h>
#include <stdio.h>

#include "loop_check.h"

#define CHECK(x)                                                           \
    do {                                                                   \
        CUresult r_ = (x);                                                 \
        if (r_ != CUDA_SUCCESS) {                                          \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, r_); \
            return 1;                                                      \
        }                                                                  \
    } while (0)

#ifdef LOOP_DLOPEN
static PFN_cuGetProcAddress_v12000 gpa;
#define GET(var, name, version)                                                               \
    CHECK(gpa(name, (void **)&var, version, CU_GET_PROC_ADDRESS_DEFAULT, NULL))
#endif

int main(void)
{
    const int n = 1000;
#ifdef LOOP_DLOPEN
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    void *sym = h ? dlsym(h, "cuGetProcAddress_v2") : NULL;
    if (sym == NULL) {
        fprintf(stderr, "no driver: %s\n", dlerror());
        return 1;
    }
    memcpy(&gpa, &sym, sizeof gpa);
    PFN_cuInit_v2000 p_init;
    PFN_cuDeviceGet_v2000 p_device_get;
    PFN_cuDevicePrimaryCtxRetain_v7000 p_retain;
    PFN_cuCtxSetCurrent_v4000 p_set_current;
    PFN_cuMemAlloc_v3020 p_alloc;
    PFN_cuMemsetD8_v3020 p_memset;
    PFN_cuMemFree_v3020 p_free;
    GET(p_init, "cuInit", 2000);
    GET(p_device_get, "cuDeviceGet", 2000);
    GET(p_retain, "cuDevicePrimaryCtxRetain", 7000);
    GET(p_set_current, "cuCtxSetCurrent", 4000);
    GET(p_alloc, "cuMemAlloc", 3020);
    GET(p_memset, "cuMemsetD8", 3020);
    GET(p_free, "cuMemFree", 3020);
#else
#define p_init cuInit
#define p_device_get cuDeviceGet
#define p_retain cuDevicePrimaryCtxRetain
#define p_set_current cuCtxSetCurrent
#define p_alloc cuMemAlloc
#define p_memset cuMemsetD8
#define p_free cuMemFree
#endif
    CUdevice dev;
    CUcontext ctx;
    CHECK(p_init(0));
    CHECK(p_device_get(&dev, 0));
    CHECK(p_retain(&ctx, dev));
    CHECK(p_set_current(ctx));
    for (int i = 0; i < n; i++) {
        CUdeviceptr p;
        CHECK(p_alloc(&p, 64u << 20));
        CHECK(p_memset(p, (unsigned char)i, 1 << 20));
        CHECK(p_free(p));
    }
    return loop_check(n);
}
