/* hip_runtime_facts.c: what the HIP stand-in answers as chipStar and ROCm do, where hip-tests
 * check it (issue 39): hipFree leaves the device idle (hip_runtime_api.h: it "performs an
 * implicit hipDeviceSynchronize() call"), hipMemPtrGetInfo answers the size asked, and with
 * SIMDEV_BASE_OFFSET=128 large allocations start 128 bytes past a boundary while small ones
 * stay 256-aligned. */
#include <hip/hip_runtime_api.h>
#include <pthread.h>
#include <stdint.h>

#include "check.h"

#define MiB ((size_t)1 << 20)

static struct gate g;
static void gate_cb(hipStream_t s, hipError_t st, void *p) { (void)s; (void)st; gate_wait(p); }
static void *opener(void *p)
{
    usleep(50 * 1000);
    gate_open(p);
    return NULL;
}

int main(void)
{
    sim_begin("simdevice hip");
    /* hipFree waits for the whole device: the null stream and a non-blocking stream, held by
     * a host callback that another thread lets go, are both idle when it returns. */
    hipStream_t nb;
    void *p = NULL, *q = NULL;
    CHECK_EQ(hipStreamCreateWithFlags(&nb, hipStreamNonBlocking), hipSuccess);
    CHECK_EQ(hipMalloc(&p, 4096), hipSuccess);
    CHECK_EQ(hipStreamAddCallback(NULL, gate_cb, &g, 0), hipSuccess);
    CHECK_EQ(hipMemsetAsync(p, 1, 4096, nb), hipSuccess);
    CHECK_EQ(hipStreamQuery(NULL), hipErrorNotReady);
    CHECK_EQ(hipGetLastError(), hipErrorNotReady);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, opener, &g), 0);
    CHECK_EQ(hipFree(p), hipSuccess);
    CHECK_EQ(hipStreamQuery(NULL), hipSuccess);
    CHECK_EQ(hipStreamQuery(nb), hipSuccess);
    CHECK(gate_flag(&g.done));
    pthread_join(t, NULL);

    /* Sizes: hipMemPtrGetInfo and hipMemGetAddressRange answer the size asked, at the start
     * and inside; unknown memory and a NULL size are invalid values. */
    size_t n = 0;
    void *base = NULL;
    CHECK_EQ(hipMalloc(&p, 1024), hipSuccess);
    CHECK_EQ(hipMemPtrGetInfo(p, &n), hipSuccess);
    CHECK_EQ(n, 1024);
    CHECK_EQ(hipMemPtrGetInfo((char *)p + 1000, &n), hipSuccess);
    CHECK_EQ(n, 1024);
    CHECK_EQ(hipMemGetAddressRange(&base, &n, (char *)p + 10), hipSuccess);
    CHECK(base == p && n == 1024);
    CHECK_EQ(hipMemPtrGetInfo(p, NULL), hipErrorInvalidValue);
    CHECK_EQ(hipMemPtrGetInfo(&n, &n), hipErrorInvalidValue);
    CHECK_EQ(hipGetLastError(), hipErrorInvalidValue);

    /* Where allocations start. */
    const char *off = getenv("SIMDEV_BASE_OFFSET");
    size_t lead = off ? (size_t)atoi(off) : 0;
    CHECK_EQ(hipMalloc(&q, 2 * MiB), hipSuccess);
    CHECK_EQ((uintptr_t)q % (2 * MiB), lead);
    CHECK_EQ((uintptr_t)p % 256, 0);
    CHECK_EQ(hipMemPtrGetInfo((char *)q + 2 * MiB - 1, &n), hipSuccess);
    CHECK_EQ(n, 2 * MiB);
    CHECK_EQ(hipMemGetAddressRange(&base, &n, (char *)q + 100), hipSuccess);
    CHECK(base == q && n == 2 * MiB);
    /* Every byte is the allocation's, none before it, and it goes back whole. */
    static unsigned char h[2 * MiB];
    memset(h, 7, sizeof h);
    CHECK_EQ(hipMemcpy(q, h, sizeof h, hipMemcpyHostToDevice), hipSuccess);
    memset(h, 0, sizeof h);
    CHECK_EQ(hipMemcpy(h, q, sizeof h, hipMemcpyDeviceToHost), hipSuccess);
    CHECK(h[0] == 7 && h[sizeof h - 1] == 7);
    CHECK_EQ(hipFree((char *)q - (lead ? lead : 512)), hipErrorInvalidDevicePointer);
    CHECK_EQ(hipGetLastError(), hipErrorInvalidDevicePointer);
    CHECK_EQ(hipFree(q), hipSuccess);
    CHECK_EQ(hipFree(p), hipSuccess);
    CHECK_EQ(sim_counters(0).reserved_bytes, 0);
    CHECK_EQ(hipStreamDestroy(nb), hipSuccess);
    puts("hip_runtime_facts: ok");
    return 0;
}
