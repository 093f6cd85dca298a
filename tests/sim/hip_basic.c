/* hip_basic.c: the HIP stand-in, key cases: identity and ABI (VMM types included), asynchrony,
 * null-stream ordering, events, data round trip, bad frees (hipErrorInvalidDevicePointer), out
 * of memory, sticky faults, kernel launch refused. Run with SIMDEV_MEMORY=64M. */
#include <hip/hip_runtime_api.h>
#include <stddef.h>

#include "check.h"

#define MiB (1024 * 1024)

static struct gate g1, g2;
static volatile int flag1;
static void gate_cb(hipStream_t s, hipError_t st, void *g) { (void)s; (void)st; gate_wait(g); }
static void flag_cb(hipStream_t s, hipError_t st, void *f)
{
    (void)s;
    CHECK_EQ(st, hipSuccess);
    __atomic_store_n((volatile int *)f, 1, __ATOMIC_SEQ_CST);
}

int main(void)
{
    sim_begin("simdevice hip");
    CHECK_EQ(sizeof(hipPointerAttribute_t), 32);
    CHECK_EQ(offsetof(hipPointerAttribute_t, devicePointer), 8);
    /* The VMM types the stand-in declares in hip_front.h (its _Static_asserts pin the same). */
    CHECK_EQ(sizeof(hipMemAllocationProp), 32);
    CHECK_EQ(offsetof(hipMemAllocationProp, location), 4);
    CHECK_EQ(offsetof(hipMemAllocationProp, requestedHandleType), 12);
    CHECK_EQ(sizeof(hipMemAllocationHandleType), sizeof(int));
    CHECK_EQ(hipMemHandleTypePosixFileDescriptor, 1);
    CHECK_EQ(offsetof(hipMemAllocationProp, type), 16);
    CHECK_EQ(offsetof(hipMemAllocationProp, win32HandleMetaData), 24);
    CHECK_EQ(sizeof(hipMemLocation), 8);
    CHECK_EQ(sizeof(hipMemAccessDesc), 12);
    CHECK_EQ(offsetof(hipMemAccessDesc, flags), 8);
    CHECK_EQ(sizeof(hipMemGenericAllocationHandle_t), sizeof(void *));
    int v = 0;
    CHECK_EQ(hipRuntimeGetVersion(&v), hipSuccess);
    CHECK_EQ(v, HIP_VERSION);
    CHECK_EQ(hipDeviceGetAttribute(&v, hipDeviceAttributeWarpSize, 0), hipSuccess);
    CHECK_EQ(v, 64);

    /* Asynchrony: the callback is held while the host goes on. */
    hipStream_t s, b, nb;
    hipEvent_t e;
    CHECK_EQ(hipStreamCreate(&s), hipSuccess);
    CHECK_EQ(hipEventCreate(&e), hipSuccess);
    CHECK_EQ(hipStreamAddCallback(s, gate_cb, &g1, 0), hipSuccess);
    CHECK_EQ(hipEventRecord(e, s), hipSuccess);
    CHECK_EQ(hipStreamQuery(s), hipErrorNotReady);
    CHECK_EQ(hipEventQuery(e), hipErrorNotReady);
    CHECK(!gate_flag(&g1.done));
    /* Null stream waits for the blocking stream s; a non-blocking one does not. */
    CHECK_EQ(hipStreamAddCallback(0, flag_cb, (void *)&flag1, 0), hipSuccess);
    CHECK_EQ(hipStreamCreateWithFlags(&nb, hipStreamNonBlocking), hipSuccess);
    CHECK_EQ(hipStreamSynchronize(nb), hipSuccess);
    usleep(100 * 1000);
    CHECK(!gate_flag(&flag1));
    /* A stream waiting on the event is held too, without holding the host. */
    CHECK_EQ(hipStreamCreate(&b), hipSuccess);
    CHECK_EQ(hipStreamWaitEvent(nb, e, 0), hipSuccess);
    CHECK_EQ(hipStreamAddCallback(nb, gate_cb, &g2, 0), hipSuccess);
    gate_open(&g2);
    usleep(50 * 1000);
    CHECK(!gate_flag(&g2.entered));
    gate_open(&g1);
    CHECK_EQ(hipDeviceSynchronize(), hipSuccess);
    CHECK(gate_flag(&flag1) && gate_flag(&g2.done));
    CHECK_EQ(hipEventSynchronize(e), hipSuccess);

    /* Data round trip. */
    enum { N = 65536 };
    static unsigned char h[N], back[N];
    void *d;
    for (int i = 0; i < N; i++)
        h[i] = (unsigned char)(i * 13);
    CHECK_EQ(hipMalloc(&d, N), hipSuccess);
    CHECK_EQ(hipMemcpy(d, h, N, hipMemcpyHostToDevice), hipSuccess);
    CHECK_EQ(hipMemsetAsync(d, 9, 10, b), hipSuccess);
    CHECK_EQ(hipMemcpyAsync(back, d, N, hipMemcpyDeviceToHost, b), hipSuccess);
    CHECK_EQ(hipStreamSynchronize(b), hipSuccess);
    for (int i = 0; i < N; i++)
        CHECK_EQ(back[i], i < 10 ? 9 : (unsigned char)(i * 13));
    hipPointerAttribute_t at;
    CHECK_EQ(hipPointerGetAttributes(&at, d), hipSuccess);
    CHECK_EQ(at.memoryType, hipMemoryTypeDevice);

    /* Bad frees: what ROCm 5.2 documents for hipFree. */
    CHECK_EQ(hipFree((char *)d + 512), hipErrorInvalidDevicePointer);
    CHECK_EQ(hipFree(d), hipSuccess);
    CHECK_EQ(hipFree(d), hipErrorInvalidDevicePointer);
    CHECK_EQ(hipGetLastError(), hipErrorInvalidDevicePointer);
    CHECK_EQ(hipGetLastError(), hipSuccess);
    CHECK_EQ(sim_counters(0).invalid_frees, 2);

    /* Out of memory. */
    void *a, *c;
    CHECK_EQ(hipMalloc(&a, 48 * MiB), hipSuccess);
    CHECK_EQ(hipMallocAsync(&c, 32 * MiB, s), hipErrorOutOfMemory);
    CHECK_EQ(hipGetLastError(), hipErrorOutOfMemory);
    CHECK_EQ(hipMallocAsync(&c, 8 * MiB, s), hipSuccess);
    CHECK_EQ(hipFreeAsync(c, s), hipSuccess);
    CHECK_EQ(hipFree(a), hipSuccess);

    /* Sticky fault: a memset of freed memory. */
    FILE *tmp;
    int saved = capture_stderr(&tmp);
    CHECK_EQ(hipMemsetAsync(a, 0, 128, s), hipSuccess);
    CHECK_EQ(hipStreamSynchronize(s), hipErrorIllegalAddress);
    CHECK_EQ(release_stderr(tmp, saved, "illegal address"), 1);
    CHECK_EQ(hipMalloc(&c, 16), hipErrorIllegalAddress);
    CHECK_EQ(hipGetLastError(), hipErrorIllegalAddress);
    CHECK_EQ(hipGetLastError(), hipErrorIllegalAddress);
    CHECK_EQ(hipDeviceReset(), hipSuccess);
    CHECK_EQ(hipGetLastError(), hipSuccess);

    static const char fake_kernel = 0;
    dim3 gd = {1, 1, 1}, bd = {64, 1, 1};
    CHECK_EQ(hipLaunchKernel(&fake_kernel, gd, bd, NULL, 0, 0), hipErrorNotSupported);
    CHECK_EQ(hipGetLastError(), hipErrorNotSupported);
    printf("hip_basic: all passed\n");
    return 0;
}
