/* drv_context.c: primary and created contexts, the per-thread context stack, and ownership:
 * memory belongs to the context that allocated it, so destroying, releasing or resetting a
 * context frees exactly its own. Run with SIMDEV_DEVICES=2 SIMDEV_MEMORY=64M. */
#include <pthread.h>

#include "drv_check.h"

#define MiB ((size_t)1 << 20)

static int active(CUdevice dev)
{
    unsigned flags;
    int on = -1;
    CU_OK(cuDevicePrimaryCtxGetState(dev, &flags, &on));
    return on;
}

static CUdeviceptr alloc(size_t n)
{
    CUdeviceptr p = 0;
    CU_OK(cuMemAlloc(&p, n));
    return p;
}

static CUdevice current_device(void)
{
    CUdevice d = -1;
    CU_OK(cuCtxGetDevice(&d));
    return d;
}

static void primary(void)
{
    CUcontext c, again;
    CHECK_EQ(active(0), 0);
    CU_OK(cuDevicePrimaryCtxRetain(&c, 0));
    CHECK_EQ(active(0), 1);
    CU_OK(cuDevicePrimaryCtxRetain(&again, 0));
    CHECK(again == c); /* one per device, at a fixed address the runtime caches */
    CU_OK(cuCtxSetCurrent(c));
    CHECK(alloc(MiB) != 0);
    CHECK_EQ(sim_counters(0).reserved_bytes, 2 * MiB); /* its page */
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CHECK_EQ(active(0), 1);
    CHECK_EQ(sim_counters(0).reserved_bytes, 2 * MiB);
    /* The last release frees the context's memory and leaves it inactive. */
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CHECK_EQ(active(0), 0);
    CHECK_EQ(sim_counters(0).reserved_bytes, 0);
    CUdeviceptr p;
    CHECK_EQ(cuMemAlloc(&p, 512), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_EQ(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_EQ(cuDevicePrimaryCtxRetain(&c, 2), CUDA_ERROR_INVALID_DEVICE);
    CU_OK(cuCtxSetCurrent(NULL));
}

static void stack(void)
{
    CUcontext a, b, cur = (CUcontext)1, popped;
    CU_OK(cuCtxGetCurrent(&cur));
    CHECK(cur == NULL);
    CUdevice d;
    CHECK_EQ(cuCtxGetDevice(&d), CUDA_ERROR_INVALID_CONTEXT);
    CHECK_EQ(cuCtxPopCurrent(&popped), CUDA_ERROR_INVALID_CONTEXT);
    CU_OK(cuCtxCreate(&a, NULL, 0, 0)); /* creating pushes */
    CU_OK(cuCtxGetCurrent(&cur));
    CHECK(cur == a);
    CU_OK(cuCtxCreate(&b, NULL, 0, 1));
    CU_OK(cuCtxGetCurrent(&cur));
    CHECK(cur == b);
    CHECK_EQ(current_device(), 1);
    CU_OK(cuCtxPopCurrent(&popped));
    CHECK(popped == b);
    CHECK_EQ(current_device(), 0);
    CU_OK(cuCtxPushCurrent(b));
    CHECK_EQ(current_device(), 1);
    CU_OK(cuCtxGetDevice_v2(&d, a));
    CHECK_EQ(d, 0);
    /* Setting replaces the top, it does not push: one pop leaves a below. */
    CU_OK(cuCtxSetCurrent(a));
    CU_OK(cuCtxPopCurrent(&popped));
    CHECK(popped == a);
    CU_OK(cuCtxGetCurrent(&cur));
    CHECK(cur == a);

    /* Synchronizing waits for the device of the context named: the current one by default. */
    struct simdev_counters s0 = sim_counters(0), s1 = sim_counters(1);
    CU_OK(cuCtxSynchronize());
    CHECK_EQ(sim_counters(0).device_syncs - s0.device_syncs, 1);
    CU_OK(cuCtxSynchronize_v2(b));
    CHECK_EQ(sim_counters(1).device_syncs - s1.device_syncs, 1);
    CHECK_EQ(sim_counters(0).device_syncs - s0.device_syncs, 1);

    CU_OK(cuCtxDestroy(b));
    CU_OK(cuCtxDestroy(a)); /* leaves the stack too */
    CU_OK(cuCtxGetCurrent(&cur));
    CHECK(cur == NULL);
    CU_OK(cuDevicePrimaryCtxRetain(&a, 0));
    /* A primary context is released, never destroyed. */
    CHECK_EQ(cuCtxDestroy(a), CUDA_ERROR_INVALID_CONTEXT);
    CU_OK(cuDevicePrimaryCtxRelease(0));
}

/* Memory of a destroyed context is gone: reading it from another context faults the device,
 * and resetting the primary context frees its own memory, keeps other contexts', and clears
 * the fault. */
static void ownership(void)
{
    drv_use_primary(0);
    CUdeviceptr mine = alloc(MiB);
    CUcontext gone, kept, popped;
    CU_OK(cuCtxCreate(&kept, NULL, 0, 0));
    CUdeviceptr theirs = alloc(4 * MiB);
    CU_OK(cuCtxPopCurrent(&popped));
    CU_OK(cuCtxCreate(&gone, NULL, 0, 0));
    CUdeviceptr lost = alloc(2 * MiB);
    CHECK_EQ(sim_counters(0).reserved_bytes, 8 * MiB); /* the 1 MiB block takes its page */
    CU_OK(cuCtxDestroy(gone));
    CHECK_EQ(sim_counters(0).reserved_bytes, 6 * MiB);
    CHECK_EQ(current_device(), 0); /* the primary context is current again */

    unsigned char buf[64];
    CHECK_ONE_LINE(cuMemcpyDtoH(buf, lost, sizeof buf), CUDA_ERROR_ILLEGAL_ADDRESS,
                   "(freed memory)");
    CHECK_EQ(cuMemAlloc(&lost, 512), CUDA_ERROR_ILLEGAL_ADDRESS); /* sticky */
    CHECK_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);

    CU_OK(cuDevicePrimaryCtxReset(0));
    CHECK_EQ(sim_counters(0).reserved_bytes, 4 * MiB);
    CHECK_EQ(cuMemFree(mine), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuCtxSynchronize());
    CU_OK(cuMemcpyDtoH(buf, theirs, sizeof buf));
    CU_OK(cuMemFree(alloc(512)));
    CU_OK(cuCtxDestroy(kept));
    CHECK_EQ(sim_counters(0).reserved_bytes, 0);
    CU_OK(cuDevicePrimaryCtxRelease(0));
    CU_OK(cuCtxSetCurrent(NULL));
}

static void two_devices(void)
{
    size_t free0, free1, total;
    drv_use_primary(1);
    CUdeviceptr p = alloc(4 * MiB);
    CU_OK(cuMemGetInfo(&free1, &total));
    CHECK_EQ(free1, 60 * MiB);
    int ordinal = -1;
    CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    CHECK_EQ(ordinal, 1);
    uint64_t m0 = sim_counters(0).malloc_calls;
    drv_use_primary(0);
    CUdeviceptr q = alloc(MiB);
    CU_OK(cuMemGetInfo(&free0, &total));
    CHECK_EQ(free0, 62 * MiB); /* the 1 MiB block's page */
    CHECK_EQ(sim_counters(0).malloc_calls - m0, 1);
    CHECK_EQ(sim_counters(1).reserved_bytes, 4 * MiB);
    /* Releasing device 1's context frees its memory only. */
    CU_OK(cuDevicePrimaryCtxRelease(1));
    CHECK_EQ(sim_counters(1).reserved_bytes, 0);
    CHECK_EQ(sim_counters(0).reserved_bytes, 2 * MiB);
    CU_OK(cuMemFree(q));
    CU_OK(cuDevicePrimaryCtxRelease(0));
}

static void *set_flags_loop(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < 2000; i++)
        CU_OK(cuDevicePrimaryCtxSetFlags(1, i & 1 ? CU_CTX_SCHED_BLOCKING_SYNC : CU_CTX_SCHED_AUTO));
    return NULL;
}

/* The primary context's flags are set and read from any thread, also through the current
 * context: under the driver's lock (a race here is what the ThreadSanitizer build reports,
 * and its report fails the test). */
static void flags_across_threads(void)
{
    CUcontext c;
    CU_OK(cuDevicePrimaryCtxRetain(&c, 1));
    CU_OK(cuCtxSetCurrent(c));
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, set_flags_loop, NULL), 0);
    for (int i = 0; i < 2000; i++) {
        unsigned flags = 99;
        int active = -1;
        CU_OK(cuDevicePrimaryCtxGetState(1, &flags, &active));
        CHECK(flags == CU_CTX_SCHED_AUTO || flags == CU_CTX_SCHED_BLOCKING_SYNC);
        CU_OK(cuCtxGetFlags(&flags));
    }
    CHECK_EQ(pthread_join(t, NULL), 0);
    CU_OK(cuDevicePrimaryCtxSetFlags(1, CU_CTX_SCHED_AUTO));
    CU_OK(cuCtxSetCurrent(NULL));
    CU_OK(cuDevicePrimaryCtxRelease(1));
}

/* NVIDIA's driver frees memory and destroys a stream by its handle, with no context current
 * (cuda-python pull request 2750: Numba's deallocations run so); a current context that is
 * unusable still refuses them. */
static void frees_without_context(void)
{
    CUcontext c;
    CUstream s;
    void *h;
    CU_OK(cuDevicePrimaryCtxRetain(&c, 0));
    CU_OK(cuCtxSetCurrent(c));
    CUdeviceptr p = alloc(MiB);
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuMemAllocHost(&h, 4096));
    uint64_t r0 = sim_counters(0).reserved_bytes;
    CU_OK(cuCtxSetCurrent(NULL));
    CU_OK(cuMemFree(p));
    CHECK_EQ(sim_counters(0).reserved_bytes, r0 - 2 * MiB); /* its page */
    CHECK_EQ(cuMemFree(p), CUDA_ERROR_INVALID_VALUE); /* freed already */
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFreeHost(h));
    CHECK_EQ(cuMemAlloc(&p, 512), CUDA_ERROR_INVALID_CONTEXT); /* allocations need one */
    CU_OK(cuDevicePrimaryCtxRelease(0));
}

int main(void)
{
    drv_begin();
    primary();
    stack();
    ownership();
    two_devices();
    flags_across_threads();
    frees_without_context();
    printf("drv_context: all passed\n");
    return 0;
}
