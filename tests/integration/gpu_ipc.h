/* gpu.h's names for interprocess memory, for the IPC scenario: the runtime calls, the driver
 * calls (-DGPU_DRIVER) and HIP's (-DGPU_HIP). GPU_IPC_REFUSED is the code an export the cache
 * refuses answers with: the one the driver gives memory it cannot export. */
#ifndef CA_TEST_GPU_IPC_H
#define CA_TEST_GPU_IPC_H

#include "gpu.h"

#ifdef GPU_HIP
typedef hipIpcMemHandle_t gpuIpcMemHandle_t;
#define gpuIpcGetMemHandle hipIpcGetMemHandle
#define gpuIpcOpenMemHandle(p, h) hipIpcOpenMemHandle((p), (h), hipIpcMemLazyEnablePeerAccess)
#define gpuIpcCloseMemHandle hipIpcCloseMemHandle
#define GPU_IPC_REFUSED hipErrorInvalidValue
static inline hipError_t gpuMemGetAddressRange(void **base, size_t *size, void *p)
{
    return hipMemGetAddressRange((hipDeviceptr_t *)base, size, (hipDeviceptr_t)p);
}
#elif defined(GPU_DRIVER)
typedef CUipcMemHandle gpuIpcMemHandle_t;
#define GPU_IPC_REFUSED CUDA_ERROR_INVALID_VALUE
static inline CUresult gpuIpcGetMemHandle(CUipcMemHandle *h, void *p)
{
    gpu_drv_thread();
    return cuIpcGetMemHandle(h, gpu_dptr(p));
}
static inline CUresult gpuIpcOpenMemHandle(void **p, CUipcMemHandle h)
{
    gpu_drv_thread();
    CUdeviceptr d = 0;
    CUresult e = cuIpcOpenMemHandle(&d, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (e == CUDA_SUCCESS)
        *p = (void *)(uintptr_t)d;
    return e;
}
static inline CUresult gpuIpcCloseMemHandle(void *p)
{
    gpu_drv_thread();
    return cuIpcCloseMemHandle(gpu_dptr(p));
}
static inline CUresult gpuMemGetAddressRange(void **base, size_t *size, void *p)
{
    gpu_drv_thread();
    CUdeviceptr b = 0;
    CUresult e = cuMemGetAddressRange(&b, size, gpu_dptr(p));
    *base = (void *)(uintptr_t)b;
    return e;
}
#else
typedef cudaIpcMemHandle_t gpuIpcMemHandle_t;
#define gpuIpcGetMemHandle cudaIpcGetMemHandle
#define gpuIpcOpenMemHandle(p, h) cudaIpcOpenMemHandle((p), (h), cudaIpcMemLazyEnablePeerAccess)
#define gpuIpcCloseMemHandle cudaIpcCloseMemHandle
#define GPU_IPC_REFUSED cudaErrorInvalidValue
/* The runtime has no range query: programs that need one (UCX) ask the driver, as here. */
static inline cudaError_t gpuMemGetAddressRange(void **base, size_t *size, void *p)
{
    typedef int (*range_fn)(unsigned long long *, size_t *, unsigned long long);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *sym = lib ? dlsym(lib, "cuMemGetAddressRange_v2") : NULL;
    if (sym == NULL)
        return cudaErrorNotSupported;
    range_fn f;
    memcpy(&f, &sym, sizeof f);
    unsigned long long b = 0;
    int e = f(&b, size, (unsigned long long)(uintptr_t)p);
    *base = (void *)(uintptr_t)b;
    return e == 0 ? cudaSuccess : cudaErrorInvalidValue;
}
#endif

#endif
