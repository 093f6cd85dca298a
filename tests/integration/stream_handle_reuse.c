/* A stream destroyed on one device and a new one created on another may get the same handle
 * (the simulator, like the real driver, reuses them). The new stream's allocations must come
 * from its own device: the shim must not answer from what it remembered of the old stream.
 * Each round asks for a size no cached block fits, so the device that serves it is the one
 * whose driver allocations grow. */
#include "gpu.h"

#define ROUNDS 64

int main(void)
{
    int reused = 0;
    gpuStream_t last = NULL;
    for (int i = 0; i < ROUNDS; i++) {
        int dev = i & 1;
        size_t size = ((size_t)64 << 20) + (size_t)i * (2 << 20);
        gpuStream_t s;
        void *p;
        CHECK(gpuSetDevice(dev));
        CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
        reused += s == last;
        uint64_t here = sim_counters(dev).malloc_calls, there = sim_counters(!dev).malloc_calls;
        CHECK(gpuMallocAsync(&p, size, s));
        EXPECT(sim_counters(dev).malloc_calls > here);
        EXPECT(sim_counters(!dev).malloc_calls == there);
        /* A plain free records no event on s: an event would keep the simulator's stream
         * object, and so its handle, from being reused. */
        CHECK(gpuFree(p));
        CHECK(gpuStreamSynchronize(s));
        CHECK(gpuStreamDestroy(s));
        last = s;
        sleep_ms(2); /* the simulator reuses a stream object once its worker has finished */
    }
    printf("%d of %d new streams got the handle of the stream destroyed before them\n", reused,
           ROUNDS);
    EXPECT(reused > 0); /* otherwise the test proved nothing */
    return 0;
}
