/* drv_pinned.c: page-locked host memory as an H100's driver treats it (docs/gpu.md finding 12):
 * the flags kept per block and read back with DEVICEMAP set, the device pointer, the address
 * queries, the frees it refuses, the counters, the price of pinning and unpinning, and the free
 * that waits for the device, with a context current or none. One case per process: the price
 * case runs with its own SIMDEV_HOST_* prices. Run with SIMDEV_MEMORY=64M. */
#include <cudaTypedefs.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "drv_check.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static unsigned host_flags(void *p)
{
    unsigned f = 0xdead;
    CU_OK(cuMemHostGetFlags(&f, p));
    return f;
}

/* Every combination of the three flags, read back at the start, inside and at the last byte:
 * DEVICEMAP is always set (an H100: none 0x2, PORTABLE 0x3, WRITECOMBINED 0x6, all 0x7). */
static void flags(void)
{
    const size_t n = 64 * KiB + 100;
    uint64_t a0 = sim_counters(0).host_allocs;
    for (unsigned f = 0; f < 8; f++) {
        void *h = NULL;
        CU_OK(cuMemHostAlloc(&h, n, f));
        CHECK(h != NULL);
        char *c = h;
        CHECK_EQ(host_flags(c), f | CU_MEMHOSTALLOC_DEVICEMAP);
        CHECK_EQ(host_flags(c + 4 * KiB), f | CU_MEMHOSTALLOC_DEVICEMAP);
        CHECK_EQ(host_flags(c + n - 1), f | CU_MEMHOSTALLOC_DEVICEMAP);
        CU_OK(cuMemFreeHost(h));
        unsigned v = 0xdead;
        CHECK_EQ(cuMemHostGetFlags(&v, h), CUDA_ERROR_INVALID_VALUE); /* freed */
        CHECK_EQ(v, 0xdead);
    }
    void *h = NULL;
    CU_OK(cuMemAllocHost(&h, 1000));
    CHECK_EQ(host_flags(h), CU_MEMHOSTALLOC_DEVICEMAP);
    CHECK_EQ(host_flags((char *)h + 999), CU_MEMHOSTALLOC_DEVICEMAP);
    CHECK_EQ(sim_counters(0).host_allocs - a0, 9);

    /* Any other bit is an invalid value, and nothing is allocated. */
    static const unsigned bad[] = {0x8, 0x10, 0x9, 0x80000000u};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        void *q = NULL;
        CHECK_EQ(cuMemHostAlloc(&q, 4096, bad[i]), CUDA_ERROR_INVALID_VALUE);
        CHECK(q == NULL);
    }
    CHECK_EQ(sim_counters(0).host_allocs - a0, 9);

    /* Memory that is not pinned: an invalid value. */
    unsigned v = 0xdead;
    int local;
    void *m = malloc(4096);
    CUdeviceptr d;
    CU_OK(cuMemAlloc(&d, 4096));
    CHECK_EQ(cuMemHostGetFlags(&v, m), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemHostGetFlags(&v, &local), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemHostGetFlags(&v, (void *)d), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemHostGetFlags(&v, (char *)h + 1000), CUDA_ERROR_INVALID_VALUE); /* past it */
    CHECK_EQ(cuMemHostGetFlags(&v, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemHostGetFlags(NULL, h), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(v, 0xdead);
    CUdeviceptr managed;
    CU_OK(cuMemAllocManaged(&managed, 4096, CU_MEM_ATTACH_GLOBAL));
    CHECK_EQ(cuMemHostGetFlags(&v, (void *)managed), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(managed));
    CU_OK(cuMemFree(d));
    free(m);
    CU_OK(cuMemFreeHost(h));

    /* NVIDIA's runtime finds the entry point at the version of its cudaTypedefs.h. */
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    CU_OK(cuGetProcAddress("cuMemHostGetFlags", &fn, 2030, 0, &st));
    CHECK(fn == (void *)(uintptr_t)cuMemHostGetFlags);
}

static uint64_t attr(CUpointer_attribute a, const void *p)
{
    uint64_t v = 0;
    CU_OK(cuPointerGetAttribute(&v, a, (CUdeviceptr)p));
    return v;
}

/* The device pointer is the host address itself; the attributes and the address range name the
 * block with exactly the size asked, at its start and inside (an H100: 1 MiB for 1 MiB, and a
 * 3 MiB block's start and 3 MiB with a 4 MiB mapping). */
static void pointers(void)
{
    CUcontext ctx = NULL;
    CU_OK(cuCtxGetCurrent(&ctx));
    const size_t n = MiB + 1000; /* not a page multiple */
    void *h = NULL;
    CU_OK(cuMemHostAlloc(&h, n, CU_MEMHOSTALLOC_PORTABLE));
    char *c = h;
    const size_t offs[] = {0, 4 * KiB, MiB, n - 1};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        char *p = c + offs[i];
        CUdeviceptr dp = 0;
        CU_OK(cuMemHostGetDevicePointer(&dp, p, 0));
        CHECK(dp == (CUdeviceptr)p);
        CHECK_EQ(cuMemHostGetDevicePointer(&dp, p, 1), CUDA_ERROR_INVALID_VALUE);

        /* 32-bit answers leave the upper half of a wider variable as it was. */
        CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p), CU_MEMORYTYPE_HOST);
        CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_MAPPED, p), 1);
        CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p), 0);
        CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_IS_MANAGED, p), 0);
        CHECK(attr(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) == (uintptr_t)h);
        CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_RANGE_SIZE, p), n);
        CHECK(attr(CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, p) == (uintptr_t)h);
        CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_MAPPING_SIZE, p), 2 * MiB);
        CHECK(attr(CU_POINTER_ATTRIBUTE_HOST_POINTER, p) == (uintptr_t)p);
        CHECK(attr(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p) == (uintptr_t)p);
        CHECK(attr(CU_POINTER_ATTRIBUTE_CONTEXT, p) == (uintptr_t)ctx);

        CUpointer_attribute as[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                    CU_POINTER_ATTRIBUTE_MAPPED,
                                    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                    CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                    CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE};
        unsigned type = 0, mapped = 0, ipc = 7;
        CUdeviceptr start = 0;
        size_t size = 0;
        void *data[] = {&type, &mapped, &start, &size, &ipc};
        CU_OK(cuPointerGetAttributes(5, as, data, (CUdeviceptr)p));
        CHECK_EQ(type, CU_MEMORYTYPE_HOST);
        CHECK_EQ(mapped, 1);
        CHECK(start == (CUdeviceptr)h);
        CHECK_EQ(size, n);
        CHECK_EQ(ipc, 0);

        CUdeviceptr base = 0;
        size = 0;
        CU_OK(cuMemGetAddressRange(&base, &size, (CUdeviceptr)p));
        CHECK(base == (CUdeviceptr)h);
        CHECK_EQ(size, n);
    }
    /* The byte after the block is not in it. */
    CUdeviceptr base = 0, dp = 0;
    size_t size = 0;
    CHECK_EQ(cuMemGetAddressRange(&base, &size, (CUdeviceptr)(c + n)), CUDA_ERROR_NOT_FOUND);
    int local;
    CHECK_EQ(cuMemHostGetDevicePointer(&dp, &local, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFreeHost(h));
    CHECK_EQ(cuMemGetAddressRange(&base, &size, (CUdeviceptr)h), CUDA_ERROR_NOT_FOUND);
    CHECK_EQ(cuMemHostGetDevicePointer(&dp, h, 0), CUDA_ERROR_INVALID_VALUE);
}

/* A free of an address inside a block, of malloc memory or of a device address is an invalid
 * value (an H100 answers 1 to each), and the block stays whole and usable. */
static void bad_frees(void)
{
    const size_t n = 256 * KiB;
    void *h = NULL, *m = malloc(4096);
    CUdeviceptr d;
    CU_OK(cuMemHostAlloc(&h, n, CU_MEMHOSTALLOC_WRITECOMBINED));
    CU_OK(cuMemAlloc(&d, n));
    memset(h, 0x3C, n);
    struct simdev_counters c0 = sim_counters(0);
    CHECK_EQ(cuMemFreeHost((char *)h + 4 * KiB), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemFreeHost((char *)h + 1), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemFreeHost(m), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemFreeHost((void *)d), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemFreeHost((void *)(d + 512)), CUDA_ERROR_INVALID_VALUE);
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.host_frees, c0.host_frees);
    CHECK_EQ(c.host_bytes, c0.host_bytes);
    CHECK_EQ(c.free_calls, c0.free_calls); /* the device block was not freed either */

    /* Still pinned, whole, and usable as the source and target of copies. */
    CHECK_EQ(host_flags((char *)h + 4 * KiB),
             CU_MEMHOSTALLOC_WRITECOMBINED | CU_MEMHOSTALLOC_DEVICEMAP);
    CUdeviceptr base = 0;
    size_t size = 0;
    CU_OK(cuMemGetAddressRange(&base, &size, (CUdeviceptr)h + 1));
    CHECK(base == (CUdeviceptr)h);
    CHECK_EQ(size, n);
    CU_OK(cuMemcpyHtoD(d, h, n));
    memset(h, 0, n);
    CU_OK(cuMemcpyDtoH(h, d, n));
    CHECK_EQ(((unsigned char *)h)[0], 0x3C);
    CHECK_EQ(((unsigned char *)h)[n - 1], 0x3C);
    CU_OK(cuMemFree(d));
    free(m);
    CU_OK(cuMemFreeHost(h));
    CHECK_EQ(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE); /* twice */
    CU_OK(cuMemFreeHost(NULL));
}

/* host_allocs and host_frees count successful calls, host_bytes the bytes held; refused calls
 * and managed memory move none of them. The totals agree with the device. */
static void counters(void)
{
    struct simdev_counters c0 = sim_counters(0);
    void *a = NULL, *b = NULL, *q = NULL;
    CU_OK(cuMemHostAlloc(&a, 1000, 0));
    CU_OK(cuMemAllocHost(&b, 3 * MiB + 5));
    CHECK_EQ(cuMemHostAlloc(&q, 1000, 0x40), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemHostAlloc(&q, 0, 0), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr managed;
    CU_OK(cuMemAllocManaged(&managed, 8192, CU_MEM_ATTACH_GLOBAL));
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.host_allocs - c0.host_allocs, 2);
    CHECK_EQ(c.host_bytes - c0.host_bytes, 1000 + 3 * MiB + 5);
    CHECK_EQ(c.host_frees, c0.host_frees);
    CHECK_EQ(c.reserved_bytes - c0.reserved_bytes, 8192); /* only the managed memory */
    struct simdev_counters t = sim_counters(-1);
    CHECK_EQ(t.host_allocs, c.host_allocs);
    CHECK_EQ(t.host_bytes, c.host_bytes);

    CU_OK(cuMemFreeHost(a));
    CHECK_EQ(cuMemFreeHost(a), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemFreeHost((char *)b + 8), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemFree(managed));
    c = sim_counters(0);
    CHECK_EQ(c.host_frees - c0.host_frees, 1);
    CHECK_EQ(c.host_bytes - c0.host_bytes, 3 * MiB + 5);
    CU_OK(cuMemFreeHost(b));
    c = sim_counters(0);
    CHECK_EQ(c.host_allocs - c0.host_allocs, 2);
    CHECK_EQ(c.host_frees - c0.host_frees, 2);
    CHECK_EQ(c.host_bytes, c0.host_bytes);
    CHECK_EQ(c.reserved_bytes, c0.reserved_bytes);
    t = sim_counters(-1);
    CHECK_EQ(t.host_frees, c.host_frees);
}

/* SIMDEV_PINNED_LIMIT=8M: pinning past 8 MiB held in all is out of memory, managed memory
 * does not count, and a free makes room again. */
static void limit(void)
{
    void *a = NULL, *b = NULL, *c = NULL;
    CU_OK(cuMemHostAlloc(&a, 5 * MiB, 0));
    CHECK_EQ(cuMemAllocHost(&b, 4 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_EQ(cuMemHostAlloc(&b, 4 * MiB, CU_MEMHOSTALLOC_PORTABLE), CUDA_ERROR_OUT_OF_MEMORY);
    CUdeviceptr managed;
    CU_OK(cuMemAllocManaged(&managed, 4 * MiB, CU_MEM_ATTACH_GLOBAL));
    CU_OK(cuMemAllocHost(&b, 3 * MiB));
    CU_OK(cuMemFreeHost(a));
    CU_OK(cuMemHostAlloc(&c, 5 * MiB, 0));
    CU_OK(cuMemFreeHost(b));
    CU_OK(cuMemFreeHost(c));
    CU_OK(cuMemFree(managed));
}

/* Pinning costs time in proportion to the size (lower bounds only: a loaded machine may take
 * longer, never less). The defaults, 900 us + 490 us/MiB to pin and 380 us + 150 us/MiB to
 * unpin, make a 1 MiB block at least 1.39 ms and its free at least 0.53 ms. */
static void default_price(void)
{
    void *h = NULL;
    double t0 = now_ms();
    CU_OK(cuMemHostAlloc(&h, MiB, 0));
    double t1 = now_ms();
    CU_OK(cuMemFreeHost(h));
    double t2 = now_ms();
    CHECK(t1 - t0 >= 1.35);
    CHECK(t2 - t1 >= 0.5);
}

/* Run with SIMDEV_HOST_ALLOC_US=20000, SIMDEV_HOST_ALLOC_US_PER_MIB=10000,
 * SIMDEV_HOST_FREE_US=15000 and SIMDEV_HOST_FREE_US_PER_MIB=5000. */
static void price(void)
{
    void *a = NULL, *b = NULL;
    double t0 = now_ms();
    CU_OK(cuMemHostAlloc(&a, MiB, 0));
    double t1 = now_ms();
    CHECK(t1 - t0 >= 20); /* the base alone */
    CU_OK(cuMemAllocHost(&b, 4 * MiB));
    double t2 = now_ms();
    CHECK(t2 - t1 >= 20 + 4 * 10); /* base and four MiB */
    CU_OK(cuMemFreeHost(b));
    double t3 = now_ms();
    CHECK(t3 - t2 >= 15 + 4 * 5);
    CU_OK(cuMemFreeHost(a));
}

static void sleep_100ms(void *done)
{
    usleep(100 * 1000);
    __atomic_store_n((volatile int *)done, 1, __ATOMIC_SEQ_CST);
}

/* cuMemFreeHost waits for the device: it returns only after a 100 ms host function queued
 * before it has run (an H100 returned after a queued 200 ms one). */
static void free_waits(void)
{
    void *h = NULL;
    CUstream s;
    static volatile int done;
    CU_OK(cuMemHostAlloc(&h, 64 * KiB, 0));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    uint64_t syncs = sim_counters(0).device_syncs;
    double t0 = now_ms();
    CU_OK(cuLaunchHostFunc(s, sleep_100ms, (void *)&done));
    CU_OK(cuMemFreeHost(h));
    double t1 = now_ms();
    CHECK(gate_flag(&done));
    CHECK(t1 - t0 >= 100);
    CHECK_EQ(sim_counters(0).device_syncs - syncs, 1);
    CU_OK(cuStreamDestroy(s));
}

/* With no context current, cuMemFreeHost still frees a block by its address and waits for its
 * device (NVIDIA's driver frees by the handle alone: cuda-python pull request 2750; Numba's
 * teardown frees so), while cuCtxSynchronize has no context to wait in. */
static void free_without_context(void)
{
    void *h = NULL;
    CUstream s;
    CUcontext ctx;
    static volatile int done;
    CU_OK(cuMemHostAlloc(&h, 64 * KiB, 0));
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    double t0 = now_ms();
    CU_OK(cuLaunchHostFunc(s, sleep_100ms, (void *)&done));
    CU_OK(cuCtxPopCurrent(&ctx));
    CHECK_EQ(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    CU_OK(cuMemFreeHost(h));
    double t1 = now_ms();
    CHECK(gate_flag(&done));
    CHECK(t1 - t0 >= 100);
    CHECK_EQ(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE); /* freed already */
    CU_OK(cuCtxPushCurrent(ctx));
    CU_OK(cuStreamDestroy(s));
}

int main(int argc, char **argv)
{
    drv_begin();
    drv_use_primary(0);
    static const struct sim_case cases[] = {
        {"flags", flags}, {"pointers", pointers}, {"bad_frees", bad_frees},
        {"counters", counters}, {"default_price", default_price}, {"price", price},
        {"free_waits", free_waits}, {"free_without_context", free_without_context},
        {"limit", limit},
    };
    return sim_run_case("drv_pinned", argc, argv, cases, sizeof cases / sizeof cases[0]);
}
