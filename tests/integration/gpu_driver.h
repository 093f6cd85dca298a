/* gpu.h's names on the CUDA driver API (-DGPU_DRIVER), for programs linked with -lcuda, so that
 * the runtime scenarios run unchanged as driver-API programs (TensorFlow, JAX and Numba reach
 * the driver this way). The runtime's implicit context is made explicit as the runtime makes it:
 * a thread's first call makes device 0's primary context current, and gpuSetDevice makes
 * another device's primary context current. Included by gpu.h only. */
#ifndef CA_TEST_GPU_DRIVER_H
#define CA_TEST_GPU_DRIVER_H

#include <cuda.h>
#include <stdint.h>

typedef CUresult gpuError_t;
typedef CUstream gpuStream_t;
typedef CUevent gpuEvent_t;
#define GPU_API "cuda"
#define GPU_SIM_LIB "libcuda.so.1"
/* The driver keeps no last error: gpuGetLastError always answers success. */
#define GPU_HAS_LAST_ERROR 0
#define gpuSuccess CUDA_SUCCESS
#define gpuErrorOOM CUDA_ERROR_OUT_OF_MEMORY
#define gpuErrorIllegalAddress CUDA_ERROR_ILLEGAL_ADDRESS
#define gpuStreamNonBlocking CU_STREAM_NON_BLOCKING
#define gpuStreamPerThread CU_STREAM_PER_THREAD
/* Copies infer their direction from the addresses (unified addressing). */
#define gpuMemcpyDefault 0

_Static_assert(sizeof(CUdeviceptr) == sizeof(void *), "a device pointer is kept in a void *");

static inline CUdeviceptr gpu_dptr(const void *p)
{
    return (CUdeviceptr)(uintptr_t)p;
}

/* The primary context of device dev made current on the calling thread. It is retained once
 * per process, as the runtime retains it, and never released: a release to zero would free
 * its memory behind the cache's back. */
static inline CUresult gpu_drv_use(int dev)
{
    static CUcontext primary[64];
    CUdevice d;
    CUresult e = cuInit(0);
    if (e == CUDA_SUCCESS)
        e = cuDeviceGet(&d, dev);
    if (e == CUDA_SUCCESS && dev >= 64)
        e = CUDA_ERROR_INVALID_DEVICE;
    if (e != CUDA_SUCCESS)
        return e;
    CUcontext ctx = __atomic_load_n(&primary[dev], __ATOMIC_ACQUIRE);
    if (ctx == NULL) {
        if ((e = cuDevicePrimaryCtxRetain(&ctx, d)) != CUDA_SUCCESS)
            return e;
        CUcontext none = NULL;
        /* Another thread retained it meanwhile: one retain is kept, the other dropped. */
        if (!__atomic_compare_exchange_n(&primary[dev], &none, ctx, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE))
            cuDevicePrimaryCtxRelease(d);
    }
    return cuCtxSetCurrent(ctx);
}

/* The current context's access to device peer's primary context's memory, on or off, as
 * cudaDeviceEnablePeerAccess gives it; the current context stays. */
static inline CUresult gpu_drv_peer(int peer, unsigned flags, int on)
{
    CUcontext mine = NULL, theirs = NULL;
    CUresult e = cuCtxGetCurrent(&mine);
    if (e == CUDA_SUCCESS)
        e = gpu_drv_use(peer);
    if (e == CUDA_SUCCESS)
        e = cuCtxGetCurrent(&theirs);
    CUresult back = cuCtxSetCurrent(mine);
    if (e != CUDA_SUCCESS || back != CUDA_SUCCESS)
        return e != CUDA_SUCCESS ? e : back;
    return on ? cuCtxEnablePeerAccess(theirs, flags) : cuCtxDisablePeerAccess(theirs);
}

/* Before every call: a thread without a current context gets device 0's primary one, as the
 * runtime gives it (once per thread; a context the thread chose stays). */
static inline void gpu_drv_thread(void)
{
    static _Thread_local int ready;
    if (ready)
        return;
    ready = 1;
    CUcontext ctx = NULL;
    if (cuInit(0) == CUDA_SUCCESS && cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx == NULL)
        gpu_drv_use(0);
}

/* The driver stores a CUdeviceptr where the program keeps a pointer (same size, asserted
 * above): the pointer is handed to the driver as it is, as driver-API programs commonly do, so
 * a failed call leaves it exactly as the driver left it. */
static inline CUresult gpu_drv_malloc(void **p, size_t n, int async, CUstream s)
{
    gpu_drv_thread();
    CUdeviceptr *d = (CUdeviceptr *)(void *)p;
    return async ? cuMemAllocAsync(d, n, s) : cuMemAlloc(d, n);
}

static inline CUresult gpu_drv_reset(void)
{
    CUdevice d;
    gpu_drv_thread();
    CUresult e = cuCtxGetDevice(&d);
    return e != CUDA_SUCCESS ? e : cuDevicePrimaryCtxReset(d);
}

/* x after the calling thread's context is set up. */
#define GPU_DRV(x) (gpu_drv_thread(), (x))

#define gpuMalloc(p, n) gpu_drv_malloc((p), (n), 0, NULL)
#define gpuFree(p) GPU_DRV(cuMemFree(gpu_dptr(p)))
#define gpuMallocAsync(p, n, s) gpu_drv_malloc((p), (n), 1, (s))
#define gpuFreeAsync(p, s) GPU_DRV(cuMemFreeAsync(gpu_dptr(p), (s)))
#define gpuMemGetInfo(f, t) GPU_DRV(cuMemGetInfo((f), (t)))
#define gpuDeviceReset() gpu_drv_reset()
#define gpuDeviceSynchronize() GPU_DRV(cuCtxSynchronize())
#define gpuStreamCreate(s) GPU_DRV(cuStreamCreate((s), CU_STREAM_DEFAULT))
#define gpuStreamCreateWithFlags(s, f) GPU_DRV(cuStreamCreate((s), (f)))
#define gpuStreamDestroy(s) GPU_DRV(cuStreamDestroy(s))
#define gpuStreamSynchronize(s) GPU_DRV(cuStreamSynchronize(s))
#define gpuStreamWaitEvent(s, e, f) GPU_DRV(cuStreamWaitEvent((s), (e), (f)))
#define gpuEventCreate(e) GPU_DRV(cuEventCreate((e), CU_EVENT_DEFAULT))
#define gpuEventRecord(e, s) GPU_DRV(cuEventRecord((e), (s)))
#define gpuEventDestroy(e) GPU_DRV(cuEventDestroy(e))
#define gpuEventSynchronize(e) GPU_DRV(cuEventSynchronize(e))
#define gpuLaunchHostFunc(s, fn, arg) GPU_DRV(cuLaunchHostFunc((s), (fn), (arg)))
#define gpuMemsetAsync(p, v, n, s) GPU_DRV(cuMemsetD8Async(gpu_dptr(p), (unsigned char)(v), (n), (s)))
#define gpuMemset(p, v, n) GPU_DRV(cuMemsetD8(gpu_dptr(p), (unsigned char)(v), (n)))
#define gpuMemcpyAsync(d, s, n, kind, st) GPU_DRV(cuMemcpyAsync(gpu_dptr(d), gpu_dptr(s), (n), (st)))
#define gpuMemcpy(d, s, n, kind) GPU_DRV(cuMemcpy(gpu_dptr(d), gpu_dptr(s), (n)))
#define gpuMallocHost(p, n) GPU_DRV(cuMemAllocHost((p), (n)))
#define gpuFreeHost(p) GPU_DRV(cuMemFreeHost(p))
#define gpuGetLastError() CUDA_SUCCESS
#define gpuGetDevice(d) GPU_DRV(cuCtxGetDevice(d))
/* The context it makes current is the thread's choice: gpu_drv_thread leaves it. */
#define gpuSetDevice(d) gpu_drv_use(d)
#define gpuGetDeviceCount(n) GPU_DRV(cuDeviceGetCount(n))
#define gpuDeviceEnablePeerAccess(p, f) GPU_DRV(gpu_drv_peer((p), (f), 1))
#define gpuDeviceDisablePeerAccess(p) GPU_DRV(gpu_drv_peer((p), 0, 0))

#endif
