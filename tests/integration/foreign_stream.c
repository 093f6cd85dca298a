/* A stream created behind the shim's back (as through the driver API): made here with the
 * runtime's own function, found in the runtime's handle where the shim does not interpose.
 * 1. A free of a pointer the cache never handed out, on that unknown stream, goes to the
 *    runtime and costs nothing: the cache does not even learn of the stream (no device
 *    synchronization to switch the device to fences).
 * 2. Once the program uses it with the async API, the shim learns its real flags: it is
 *    non-blocking, so a block freed with the plain API is not reused while the stream still
 *    writes it. */
#include "gpu.h"

#define BIG (8u << 20)

#ifdef GPU_HIP
#define REAL_CREATE "hipStreamCreateWithFlags"
#define REAL_MALLOC_ASYNC "hipMallocAsync"
#else
#define REAL_CREATE "cudaStreamCreateWithFlags"
#define REAL_MALLOC_ASYNC "cudaMallocAsync"
#endif

static void *real_fn(const char *name)
{
    void *h = dlopen(GPU_RT_LIB, RTLD_NOW | RTLD_NOLOAD);
    void *f = h ? dlsym(h, name) : NULL;
    EXPECT(f != NULL);
    return f;
}

int main(void)
{
    gpuError_t (*create)(gpuStream_t *, unsigned);
    gpuError_t (*malloc_async)(void **, size_t, gpuStream_t);
    void *f = real_fn(REAL_CREATE);
    memcpy(&create, &f, sizeof f);
    f = real_fn(REAL_MALLOC_ASYNC);
    memcpy(&malloc_async, &f, sizeof f);

    CHECK(gpuFree(NULL));
    gpuStream_t ns;
    CHECK(create(&ns, gpuStreamNonBlocking));

    /* 1. A foreign block freed on the unknown stream. */
    void *foreign;
    CHECK(malloc_async(&foreign, 4096, ns));
    CHECK(gpuStreamSynchronize(ns));
    struct simdev_counters before = sim_counters(0);
    CHECK(gpuFreeAsync(foreign, ns));
    CHECK(gpuStreamSynchronize(ns));
    struct simdev_counters after = sim_counters(0);
    printf("foreign free on an unknown stream: %llu device synchronizations\n",
           (unsigned long long)(after.device_syncs - before.device_syncs));
    EXPECT(after.device_syncs == before.device_syncs);

    /* 2. The stream's real flags. */
    void *x;
    CHECK(gpuMallocAsync(&x, 4096, ns));
    CHECK(gpuFreeAsync(x, ns));
    int bad = 0;
    for (int i = 0; i < 5; i++) {
        void *a, *b;
        CHECK(gpuMalloc(&a, BIG));
        CHECK(gpu_host_sleep(ns, 50));
        CHECK(gpuMemsetAsync(a, 0xA1, BIG, ns));
        CHECK(gpuFree(a));
        CHECK(gpuMalloc(&b, BIG));
        CHECK(gpuMemsetAsync(b, 0x5E, BIG, NULL));
        CHECK(gpuStreamSynchronize(NULL));
        CHECK(gpuStreamSynchronize(ns));
        unsigned char c = 0;
        CHECK(gpuMemcpy(&c, b, 1, gpuMemcpyDefault));
        if (c != 0x5E)
            bad++;
        CHECK(gpuFree(b));
    }
    printf("plain free with a non-blocking driver stream: %d of 5 reads saw a reused block\n", bad);
    CHECK(gpuDeviceSynchronize());
    return bad ? 1 : 0;
}
