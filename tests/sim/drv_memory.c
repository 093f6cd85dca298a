/* drv_memory.c: the driver's allocation calls: device memory and its frees (which wait for the
 * device), stream-ordered allocation in both stream flavours, the default pool, managed and
 * pinned host memory, address ranges and pointer attributes. Run with SIMDEV_MEMORY=64M. */
#include <cudaTypedefs.h>
#include <pthread.h>
#include <string.h>

#include "drv_check.h"

#define MiB ((size_t)1 << 20)

static CUcontext ctx;

static void device_memory(void)
{
    CUdeviceptr p = 0, q;
    int local;
    size_t free_bytes, total;
    struct simdev_counters c0 = sim_counters(0);
    CHECK_EQ(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE); /* unlike cudaMalloc */
    CHECK_EQ(cuMemAlloc(NULL, 512), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAlloc(&p, 1000));
    CU_OK(cuMemGetInfo(&free_bytes, &total));
    CHECK_EQ(total, 64 * MiB);
    CHECK_EQ(free_bytes, 64 * MiB - 2 * MiB); /* a whole page, as a GPU maps it */
    CHECK_EQ(cuMemFree(p + 512), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemFree((CUdeviceptr)&local), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(p));
    CHECK_EQ(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(0));
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.malloc_calls - c0.malloc_calls, 1);
    CHECK_EQ(c.free_calls - c0.free_calls, 1);
    CHECK_EQ(c.invalid_frees - c0.invalid_frees, 3);
    CHECK_EQ(c.device_syncs - c0.device_syncs, 1);
    CHECK_EQ(c.reserved_bytes, 0);
    CHECK_EQ(cuMemAlloc(&q, 65 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
}

struct free_arg {
    CUdeviceptr p;
    volatile int returned;
};

static void *free_thread(void *v)
{
    struct free_arg *a = v;
    CU_OK(cuCtxSetCurrent(ctx)); /* contexts are current per thread */
    CU_OK(cuMemFree(a->p));
    __atomic_store_n(&a->returned, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* A free waits for every stream of the device, even a non-blocking one. */
static void free_waits_for_device(void)
{
    CUstream s;
    struct gate g = {0};
    struct free_arg a = {0};
    CU_OK(cuMemAlloc(&a.p, 4096));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuLaunchHostFunc(s, drv_gate_fn, &g));
    pthread_t t;
    CHECK(pthread_create(&t, NULL, free_thread, &a) == 0);
    usleep(100 * 1000);
    CHECK(!gate_flag(&a.returned));
    gate_open(&g);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(gate_flag(&g.done));
    CU_OK(cuStreamDestroy(s));
}

struct copy_arg {
    CUstream s;
    void *dst;
    CUdeviceptr src;
    volatile int returned;
};

static void *copy_thread(void *v)
{
    struct copy_arg *a = v;
    CU_OK(cuCtxSetCurrent(ctx));
    CU_OK(cuMemcpyDtoHAsync(a->dst, a->src, 4096, a->s));
    __atomic_store_n(&a->returned, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* An asynchronous copy into pageable host memory returns once the copy is done; into pinned
 * memory it returns at once (a real GPU does both: the race tests once relied on the first
 * returning early, which no GPU does). */
static void pageable_copy_waits(void)
{
    static unsigned char pageable[4096];
    CUstream s;
    struct gate g = {0};
    CUdeviceptr p;
    void *pinned;
    CU_OK(cuMemAlloc(&p, 4096));
    CU_OK(cuMemsetD8(p, 0x5A, 4096));
    CU_OK(cuMemAllocHost(&pinned, 4096));
    memset(pinned, 0, 4096);
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuLaunchHostFunc(s, drv_gate_fn, &g));
    CU_OK(cuMemcpyDtoHAsync(pinned, p, 4096, s));
    CHECK_EQ(((unsigned char *)pinned)[0], 0); /* queued behind the gate */
    struct copy_arg a = {s, pageable, p, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, copy_thread, &a) == 0);
    usleep(100 * 1000);
    CHECK(!gate_flag(&a.returned));
    gate_open(&g);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_EQ(pageable[0], 0x5A);
    CHECK_EQ(pageable[4095], 0x5A);
    CHECK_EQ(((unsigned char *)pinned)[4095], 0x5A); /* ran before the later copy */
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuMemFreeHost(pinned));
    CU_OK(cuMemFree(p));
}

/* Stream-ordered: the free takes effect when its stream reaches it. */
static void stream_ordered(void)
{
    CUstream s;
    struct gate g = {0};
    CUdeviceptr p;
    uint64_t r0 = sim_counters(0).reserved_bytes;
    CU_OK(cuStreamCreate(&s, 0));
    CU_OK(cuMemAllocAsync(&p, MiB, s));
    CHECK_EQ(sim_counters(0).reserved_bytes - r0, MiB);
    CU_OK(cuLaunchHostFunc(s, drv_gate_fn, &g));
    CU_OK(cuMemFreeAsync(p, s));
    CHECK_EQ(cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE); /* already being freed */
    usleep(20 * 1000);
    CHECK_EQ(sim_counters(0).reserved_bytes - r0, MiB);
    gate_open(&g);
    CU_OK(cuStreamSynchronize(s));
    CHECK_EQ(sim_counters(0).reserved_bytes, r0);
    CU_OK(cuStreamDestroy(s));
}

/* The variant a per-thread build finds with flag 2, at the version of its cudaTypedefs.h type. */
#define LOOKUP_PTSZ(name, version)                                                          \
    ((PFN_##name##_v##version##_ptsz)(uintptr_t)lookup_ptsz(#name, version))

static void *lookup_ptsz(const char *name, int version)
{
    void *f = NULL;
    CU_OK(cuGetProcAddress(name, &f, version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                           NULL));
    return f;
}

/* Stream 0 of the _ptsz forms is the calling thread's own stream, which the legacy stream's
 * query does not see. */
static void per_thread_forms(void)
{
    PFN_cuMemAllocAsync_v11020_ptsz alloc = LOOKUP_PTSZ(cuMemAllocAsync, 11020);
    PFN_cuMemFreeAsync_v11020_ptsz free_ = LOOKUP_PTSZ(cuMemFreeAsync, 11020);
    PFN_cuLaunchHostFunc_v10000_ptsz host_fn = LOOKUP_PTSZ(cuLaunchHostFunc, 10000);
    PFN_cuStreamQuery_v7000_ptsz query = LOOKUP_PTSZ(cuStreamQuery, 7000);
    struct gate g = {0};
    CUdeviceptr p;
    struct simdev_counters c0 = sim_counters(0);
    CU_OK(alloc(&p, MiB, NULL));
    CU_OK(host_fn(NULL, drv_gate_fn, &g));
    CU_OK(free_(p, NULL));
    CHECK_EQ(query(NULL), CUDA_ERROR_NOT_READY);
    CU_OK(cuStreamQuery(NULL));
    CHECK_EQ(sim_counters(0).reserved_bytes - c0.reserved_bytes, MiB);
    gate_open(&g);
    CU_OK(cuCtxSynchronize());
    CU_OK(query(NULL));
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.reserved_bytes, c0.reserved_bytes);
    CHECK_EQ(c.malloc_async_calls - c0.malloc_async_calls, 1);
    CHECK_EQ(c.free_async_calls - c0.free_async_calls, 1);
}

static void default_pool(void)
{
    CUmemoryPool pool = NULL, current = NULL;
    int local;
    CU_OK(cuDeviceGetDefaultMemPool(&pool, 0));
    CHECK(pool != NULL);
    CU_OK(cuDeviceGetMemPool(&current, 0));
    CHECK(current == pool);
    CU_OK(cuMemPoolTrimTo(pool, 0));
    CHECK_EQ(cuMemPoolTrimTo((CUmemoryPool)&local, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuDeviceGetDefaultMemPool(&pool, 1), CUDA_ERROR_INVALID_DEVICE);
}

/* Managed memory is host memory counted against the device, reachable from both sides. */
static void managed(void)
{
    CUdeviceptr m;
    uint64_t r0 = sim_counters(0).reserved_bytes;
    CHECK_EQ(cuMemAllocManaged(&m, 1000, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAllocManaged(&m, 1000, CU_MEM_ATTACH_GLOBAL));
    CHECK_EQ(sim_counters(0).reserved_bytes - r0, 1024);
    memset((void *)m, 1, 1000);
    CU_OK(cuMemsetD8(m + 10, 2, 10));
    CU_OK(cuCtxSynchronize());
    CHECK_EQ(((unsigned char *)m)[9], 1);
    CHECK_EQ(((unsigned char *)m)[19], 2);
    /* A 32-bit answer: the upper half of a wider variable stays as it was. */
    uint64_t is_managed = ~(uint64_t)0;
    CU_OK(cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m + 500));
    CHECK(is_managed == 0xFFFFFFFF00000001ull);
    CHECK_EQ(cuMemFreeHost((void *)m), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(m));
    CHECK_EQ(sim_counters(0).reserved_bytes, r0);
}

static void pinned(void)
{
    void *h;
    unsigned type = 0;
    uint64_t r0 = sim_counters(0).reserved_bytes, s0 = sim_counters(0).device_syncs;
    CU_OK(cuMemHostAlloc(&h, 1000, CU_MEMHOSTALLOC_PORTABLE));
    CHECK_EQ(sim_counters(0).reserved_bytes, r0); /* no device memory */
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)h));
    CHECK_EQ(type, CU_MEMORYTYPE_HOST);
    CHECK_EQ(cuMemFree((CUdeviceptr)h), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFreeHost(h));
    CHECK_EQ(sim_counters(0).device_syncs - s0, 1);
    CHECK_EQ(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
}

static void pointer_queries(void)
{
    CUdeviceptr p, base = 0;
    size_t size = 0;
    int local;
    CU_OK(cuMemAlloc(&p, 10000));
    CU_OK(cuMemGetAddressRange(&base, &size, p + 4321));
    CHECK(base == p);
    CHECK_EQ(size, 10000);
    CHECK_EQ(cuMemGetAddressRange(&base, &size, (CUdeviceptr)&local), CUDA_ERROR_NOT_FOUND);

    unsigned type = 0;
    int ordinal = -1;
    uint64_t is_managed = ~(uint64_t)0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p + 1));
    CHECK_EQ(type, CU_MEMORYTYPE_DEVICE);
    CU_OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
    CHECK_EQ(ordinal, 0);
    CU_OK(cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
    CHECK(is_managed == 0xFFFFFFFF00000000ull);
    CHECK_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)&local),
             CUDA_ERROR_INVALID_VALUE);

    /* The plural form answers for unknown memory too, with empty values. */
    CUpointer_attribute attrs[3] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                    CU_POINTER_ATTRIBUTE_IS_MANAGED};
    unsigned managed = 7;
    void *data[3] = {&type, &ordinal, &managed};
    CU_OK(cuPointerGetAttributes(3, attrs, data, p));
    CHECK_EQ(type, CU_MEMORYTYPE_DEVICE);
    CHECK_EQ(ordinal, 0);
    CHECK_EQ(managed, 0);
    CU_OK(cuPointerGetAttributes(3, attrs, data, (CUdeviceptr)&local));
    CHECK_EQ(type, 0);
    CHECK_EQ(ordinal, -2);
    CU_OK(cuMemFree(p));
}

/* What cuMemAlloc takes from the device, as a GPU backs it with 2 MiB pages: a block of a page
 * or more is rounded up to whole pages; smaller blocks share pages, a page going back when its
 * last block is freed. A plain runtime's tightest device is measured on this. */
static size_t used_now(void)
{
    size_t f, t;
    CU_OK(cuMemGetInfo(&f, &t));
    return t - f;
}

static void page_charges(void)
{
    size_t base = used_now();
    CUdeviceptr big, s1, s2, s3;
    CU_OK(cuMemAlloc(&big, 3 * MiB + 1000));
    CHECK_EQ(used_now() - base, 4 * MiB);
    CU_OK(cuMemAlloc(&s1, MiB));
    CHECK_EQ(used_now() - base, 6 * MiB);
    CU_OK(cuMemAlloc(&s2, 512 * 1024));
    CHECK_EQ(used_now() - base, 6 * MiB); /* shares s1's page */
    CU_OK(cuMemAlloc(&s3, 600 * 1024));
    CHECK_EQ(used_now() - base, 8 * MiB); /* 2,112 KiB of small blocks: two pages */
    CU_OK(cuMemFree(s1));
    CHECK_EQ(used_now() - base, 6 * MiB);
    CU_OK(cuMemFree(big));
    CHECK_EQ(used_now() - base, 2 * MiB);
    CU_OK(cuMemFree(s2));
    CU_OK(cuMemFree(s3));
    CHECK_EQ(used_now(), base);
}

int main(void)
{
    drv_begin();
    ctx = drv_use_primary(0);
    device_memory();
    page_charges();
    free_waits_for_device();
    pageable_copy_waits();
    stream_ordered();
    per_thread_forms();
    default_pool();
    managed();
    pinned();
    pointer_queries();
    printf("drv_memory: all passed\n");
    return 0;
}
