/* hip_pinned.c: pinned host memory in the HIP stand-in, on the CUDA driver's model (docs/gpu.md
 * finding 12) with HIP's codes: the documented hipHostMalloc flags kept per block and read back
 * as given, the device pointer, the address queries, the frees refused with
 * hipErrorInvalidValue, the counters, the price, and the free that waits for the device. One
 * case per process: the price case runs with its own SIMDEV_HOST_* prices. Run with
 * SIMDEV_MEMORY=64M. */
#include <hip/hip_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

#define HIP_OK(call) CHECK_EQ((call), hipSuccess)

/* The deprecated names are part of the interface the stand-in serves. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static unsigned host_flags(void *p)
{
    unsigned f = 0xdead;
    HIP_OK(hipHostGetFlags(&f, p));
    return f;
}

/* Every documented flag is kept and read back as given (ROCm adds no Mapped, unlike CUDA), at
 * the start, inside and at the last byte; undocumented bits and Coherent with NonCoherent are
 * refused and allocate nothing. */
static void flags(void)
{
    const size_t n = 64 * KiB + 100;
    static const unsigned good[] = {
        hipHostMallocDefault, hipHostMallocPortable, hipHostMallocMapped,
        hipHostMallocPortable | hipHostMallocMapped, hipHostMallocWriteCombined,
        hipHostMallocPortable | hipHostMallocMapped | hipHostMallocWriteCombined,
        hipHostMallocNumaUser, hipHostMallocCoherent, hipHostMallocNonCoherent,
        hipHostMallocMapped | hipHostMallocCoherent | hipHostMallocNumaUser,
    };
    uint64_t a0 = sim_counters(0).host_allocs;
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        void *h = NULL;
        HIP_OK(hipHostMalloc(&h, n, good[i]));
        CHECK(h != NULL);
        char *c = h;
        CHECK_EQ(host_flags(c), good[i]);
        CHECK_EQ(host_flags(c + 4 * KiB), good[i]);
        CHECK_EQ(host_flags(c + n - 1), good[i]);
        HIP_OK(hipHostFree(h));
        unsigned v = 0xdead;
        CHECK_EQ(hipHostGetFlags(&v, h), hipErrorInvalidValue); /* freed */
        CHECK_EQ(v, 0xdead);
    }
    void *a = NULL, *b = NULL, *c = NULL;
    HIP_OK(hipMallocHost(&a, 1000));
    HIP_OK(hipMemAllocHost(&b, 1000));
    HIP_OK(hipHostAlloc(&c, 1000, hipHostMallocPortable | hipHostMallocWriteCombined));
    CHECK_EQ(host_flags(a), 0);
    CHECK_EQ(host_flags(b), 0);
    CHECK_EQ(host_flags((char *)c + 999), hipHostMallocPortable | hipHostMallocWriteCombined);
    CHECK_EQ(sim_counters(0).host_allocs - a0, sizeof good / sizeof good[0] + 3);

    static const unsigned bad[] = {0x8, 0x10, 0x10000000,
                                   hipHostMallocCoherent | hipHostMallocNonCoherent};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        void *q = NULL;
        CHECK_EQ(hipHostMalloc(&q, 4096, bad[i]), hipErrorInvalidValue);
        CHECK(q == NULL);
        CHECK_EQ(hipHostAlloc(&q, 4096, bad[i]), hipErrorInvalidValue);
    }
    CHECK_EQ(sim_counters(0).host_allocs - a0, sizeof good / sizeof good[0] + 3);
    CHECK_EQ(hipGetLastError(), hipErrorInvalidValue);
    void *z = &z;
    HIP_OK(hipHostMalloc(&z, 0, 0)); /* documented: no memory, NULL, success */
    CHECK(z == NULL);

    /* Memory that is not pinned. */
    unsigned v = 0xdead;
    int local;
    void *m = malloc(4096), *d = NULL, *managed = NULL;
    HIP_OK(hipMalloc(&d, 4096));
    HIP_OK(hipMallocManaged(&managed, 4096, hipMemAttachGlobal));
    CHECK_EQ(hipHostGetFlags(&v, m), hipErrorInvalidValue);
    CHECK_EQ(hipHostGetFlags(&v, &local), hipErrorInvalidValue);
    CHECK_EQ(hipHostGetFlags(&v, d), hipErrorInvalidValue);
    CHECK_EQ(hipHostGetFlags(&v, managed), hipErrorInvalidValue);
    CHECK_EQ(hipHostGetFlags(&v, (char *)a + 1000), hipErrorInvalidValue); /* past it */
    CHECK_EQ(hipHostGetFlags(&v, NULL), hipErrorInvalidValue);
    CHECK_EQ(hipHostGetFlags(NULL, a), hipErrorInvalidValue);
    CHECK_EQ(v, 0xdead);
    HIP_OK(hipFree(managed));
    HIP_OK(hipFree(d));
    free(m);
    HIP_OK(hipHostFree(a));
    HIP_OK(hipFreeHost(b));
    HIP_OK(hipHostFree(c));
    hipGetLastError();
}

/* The device pointer is the host address itself; hipPointerGetAttributes and
 * hipMemGetAddressRange name the block with exactly the size asked, at its start and inside. */
static void pointers(void)
{
    const size_t n = MiB + 1000; /* not a page multiple */
    void *h = NULL;
    HIP_OK(hipHostMalloc(&h, n, hipHostMallocMapped));
    char *c = h;
    const size_t offs[] = {0, 4 * KiB, MiB, n - 1};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        char *p = c + offs[i];
        void *dp = NULL;
        HIP_OK(hipHostGetDevicePointer(&dp, p, 0));
        CHECK(dp == p);
        CHECK_EQ(hipHostGetDevicePointer(&dp, p, 1), hipErrorInvalidValue);
        hipPointerAttribute_t at;
        memset(&at, 0x55, sizeof at);
        HIP_OK(hipPointerGetAttributes(&at, p));
        CHECK_EQ(at.memoryType, hipMemoryTypeHost);
        CHECK(at.hostPointer == p);
        CHECK(at.devicePointer == p);
        CHECK_EQ(at.isManaged, 0);
        void *base = NULL;
        size_t size = 0;
        HIP_OK(hipMemGetAddressRange(&base, &size, p));
        CHECK(base == h);
        CHECK_EQ(size, n);
    }
    void *base = NULL, *dp = NULL;
    size_t size = 0;
    int local;
    CHECK_EQ(hipMemGetAddressRange(&base, &size, c + n), hipErrorInvalidValue);
    CHECK_EQ(hipHostGetDevicePointer(&dp, &local, 0), hipErrorInvalidValue);
    CHECK_EQ(hipHostGetDevicePointer(NULL, h, 0), hipErrorInvalidValue);
    HIP_OK(hipHostFree(h));
    CHECK_EQ(hipMemGetAddressRange(&base, &size, h), hipErrorInvalidValue);
    CHECK_EQ(hipHostGetDevicePointer(&dp, h, 0), hipErrorInvalidValue);
    hipGetLastError();
}

/* hipHostFree of an address inside a block, of malloc memory or of device memory is
 * hipErrorInvalidValue, as ROCm's header documents, and the block stays whole and usable;
 * hipFree of pinned memory is hipErrorInvalidDevicePointer, as documented too. */
static void bad_frees(void)
{
    const size_t n = 256 * KiB;
    void *h = NULL, *d = NULL, *m = malloc(4096);
    HIP_OK(hipHostMalloc(&h, n, hipHostMallocWriteCombined));
    HIP_OK(hipMalloc(&d, n));
    memset(h, 0x3C, n);
    struct simdev_counters c0 = sim_counters(0);
    CHECK_EQ(hipHostFree((char *)h + 4 * KiB), hipErrorInvalidValue);
    CHECK_EQ(hipFreeHost((char *)h + 1), hipErrorInvalidValue);
    CHECK_EQ(hipHostFree(m), hipErrorInvalidValue);
    CHECK_EQ(hipHostFree(d), hipErrorInvalidValue);
    CHECK_EQ(hipGetLastError(), hipErrorInvalidValue);
    CHECK_EQ(hipFree(h), hipErrorInvalidDevicePointer);
    hipGetLastError();
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.host_frees, c0.host_frees);
    CHECK_EQ(c.host_bytes, c0.host_bytes);
    CHECK_EQ(c.free_calls, c0.free_calls);

    CHECK_EQ(host_flags((char *)h + 4 * KiB), hipHostMallocWriteCombined);
    void *base = NULL;
    size_t size = 0;
    HIP_OK(hipMemGetAddressRange(&base, &size, (char *)h + 1));
    CHECK(base == h);
    CHECK_EQ(size, n);
    HIP_OK(hipMemcpy(d, h, n, hipMemcpyHostToDevice));
    memset(h, 0, n);
    HIP_OK(hipMemcpy(h, d, n, hipMemcpyDeviceToHost));
    CHECK_EQ(((unsigned char *)h)[0], 0x3C);
    CHECK_EQ(((unsigned char *)h)[n - 1], 0x3C);
    HIP_OK(hipFree(d));
    free(m);
    HIP_OK(hipHostFree(h));
    CHECK_EQ(hipHostFree(h), hipErrorInvalidValue); /* twice */
    HIP_OK(hipHostFree(NULL));
    hipGetLastError();
}

/* host_allocs and host_frees count successful calls, host_bytes the bytes held; refused calls
 * and managed memory move none of them. */
static void counters(void)
{
    struct simdev_counters c0 = sim_counters(0);
    void *a = NULL, *b = NULL, *q = NULL, *managed = NULL;
    HIP_OK(hipHostMalloc(&a, 1000, 0));
    HIP_OK(hipMallocHost(&b, 3 * MiB + 5));
    CHECK_EQ(hipHostMalloc(&q, 1000, 0x40), hipErrorInvalidValue);
    HIP_OK(hipMallocManaged(&managed, 8192, hipMemAttachGlobal));
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.host_allocs - c0.host_allocs, 2);
    CHECK_EQ(c.host_bytes - c0.host_bytes, 1000 + 3 * MiB + 5);
    CHECK_EQ(c.host_frees, c0.host_frees);
    CHECK_EQ(c.reserved_bytes - c0.reserved_bytes, 8192);
    CHECK_EQ(sim_counters(-1).host_bytes, c.host_bytes);
    HIP_OK(hipHostFree(a));
    CHECK_EQ(hipHostFree((char *)b + 8), hipErrorInvalidValue);
    HIP_OK(hipFree(managed));
    c = sim_counters(0);
    CHECK_EQ(c.host_frees - c0.host_frees, 1);
    CHECK_EQ(c.host_bytes - c0.host_bytes, 3 * MiB + 5);
    HIP_OK(hipHostFree(b));
    c = sim_counters(0);
    CHECK_EQ(c.host_allocs - c0.host_allocs, 2);
    CHECK_EQ(c.host_frees - c0.host_frees, 2);
    CHECK_EQ(c.host_bytes, c0.host_bytes);
    CHECK_EQ(c.reserved_bytes, c0.reserved_bytes);
    hipGetLastError();
}

/* SIMDEV_PINNED_LIMIT=8M: as the driver's case, with HIP's code. */
static void limit(void)
{
    void *a = NULL, *b = NULL, *c = NULL, *managed = NULL;
    HIP_OK(hipHostMalloc(&a, 5 * MiB, 0));
    CHECK_EQ(hipMallocHost(&b, 4 * MiB), hipErrorOutOfMemory);
    CHECK_EQ(hipHostMalloc(&b, 4 * MiB, hipHostMallocPortable), hipErrorOutOfMemory);
    HIP_OK(hipMallocManaged(&managed, 4 * MiB, hipMemAttachGlobal));
    HIP_OK(hipHostMalloc(&b, 3 * MiB, 0));
    HIP_OK(hipHostFree(a));
    HIP_OK(hipHostMalloc(&c, 5 * MiB, 0));
    HIP_OK(hipHostFree(b));
    HIP_OK(hipHostFree(c));
    HIP_OK(hipFree(managed));
    hipGetLastError();
}

/* Lower bounds only. Run with SIMDEV_HOST_ALLOC_US=20000, SIMDEV_HOST_ALLOC_US_PER_MIB=10000,
 * SIMDEV_HOST_FREE_US=15000 and SIMDEV_HOST_FREE_US_PER_MIB=5000. */
static void price(void)
{
    void *a = NULL, *b = NULL;
    double t0 = now_ms();
    HIP_OK(hipHostMalloc(&a, MiB, 0));
    double t1 = now_ms();
    CHECK(t1 - t0 >= 20);
    HIP_OK(hipMallocHost(&b, 4 * MiB));
    double t2 = now_ms();
    CHECK(t2 - t1 >= 20 + 4 * 10);
    HIP_OK(hipHostFree(b));
    double t3 = now_ms();
    CHECK(t3 - t2 >= 15 + 4 * 5);
    HIP_OK(hipHostFree(a));
}

/* The defaults: a 1 MiB block costs at least 1.39 ms to pin and 0.53 ms to unpin. */
static void default_price(void)
{
    void *h = NULL;
    double t0 = now_ms();
    HIP_OK(hipHostMalloc(&h, MiB, 0));
    double t1 = now_ms();
    HIP_OK(hipHostFree(h));
    double t2 = now_ms();
    CHECK(t1 - t0 >= 1.35);
    CHECK(t2 - t1 >= 0.5);
}

static void sleep_cb(hipStream_t s, hipError_t st, void *done)
{
    (void)s;
    (void)st;
    usleep(100 * 1000);
    __atomic_store_n((volatile int *)done, 1, __ATOMIC_SEQ_CST);
}

/* hipHostFree waits for the device: it returns only after a 100 ms callback queued before it. */
static void free_waits(void)
{
    void *h = NULL;
    hipStream_t s;
    static volatile int done;
    HIP_OK(hipHostMalloc(&h, 64 * KiB, 0));
    HIP_OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
    uint64_t syncs = sim_counters(0).device_syncs;
    double t0 = now_ms();
    HIP_OK(hipStreamAddCallback(s, sleep_cb, (void *)&done, 0));
    HIP_OK(hipHostFree(h));
    double t1 = now_ms();
    CHECK(gate_flag(&done));
    CHECK(t1 - t0 >= 100);
    CHECK_EQ(sim_counters(0).device_syncs - syncs, 1);
    HIP_OK(hipStreamDestroy(s));
}

int main(int argc, char **argv)
{
    sim_begin("simdevice hip");
    static const struct sim_case cases[] = {
        {"flags", flags}, {"pointers", pointers}, {"bad_frees", bad_frees},
        {"counters", counters}, {"default_price", default_price}, {"price", price},
        {"free_waits", free_waits}, {"limit", limit},
    };
    return sim_run_case("hip_pinned", argc, argv, cases, sizeof cases / sizeof cases[0]);
}
