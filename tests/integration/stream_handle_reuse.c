/* A stream destroyed on one device and a new one created on another may get the same handle
 * (the simulator, like the real driver, reuses them). The new stream's allocations must come
 * from its own device: the shim must not answer from what it remembered of the old stream.
 * Both streams are used with device 0 current, so that all the calling thread remembered of
 * its last call (its current device, that handle) is the same for both but the stream's
 * device. Each allocation asks for a size no cached block fits, so the device that serves it
 * is the one whose driver allocations grow. */
#include "gpu.h"

#define ROUNDS 64

/* A stream on dev, used from device 0, that has served one allocation of size: freed. */
static gpuStream_t serve_one(int dev, size_t size)
{
    gpuStream_t s;
    void *p;
    CHECK(gpuSetDevice(dev));
    CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
    CHECK(gpuSetDevice(0));
    CHECK(gpuMallocAsync(&p, size, s));
    /* A plain free records no event on s: an event would keep the simulator's stream object,
     * and so its handle, from being reused. */
    CHECK(gpuFree(p));
    CHECK(gpuStreamSynchronize(s));
    CHECK(gpuStreamDestroy(s));
    sleep_ms(2); /* the simulator reuses a stream object once its worker has finished */
    return s;
}

int main(void)
{
    int reused = 0;
    for (int i = 0; i < ROUNDS; i++) {
        int dev = i & 1;
        size_t size = ((size_t)64 << 20) + (size_t)i * (4 << 20);
        uint64_t here = simdev_allocs(sim_counters(dev)), there = simdev_allocs(sim_counters(!dev));
        /* No counter is read between the two: reading one loads a library. */
        gpuStream_t first = serve_one(dev, size);
        gpuStream_t second = serve_one(!dev, size + (2 << 20));
        reused += first == second;
        /* Each block is new memory from its own device's driver. */
        EXPECT(simdev_allocs(sim_counters(dev)) > here);
        EXPECT(simdev_allocs(sim_counters(!dev)) > there);
    }
    printf("%d of %d second streams got the handle of the first\n", reused, ROUNDS);
    EXPECT(reused > 0); /* otherwise the test proved nothing */
    return 0;
}
