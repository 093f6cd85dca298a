/* A sticky device error (an illegal address, 700) that the real, synchronizing free would have
 * returned reaches the program through the frees the cache serves, once the cache's own device
 * calls (its fences' events) have seen it. The fault comes from a memset into memory the real
 * allocator already took back (allocated and freed inside a no-caching region). With the
 * argument "synced" (CACHEALLOC_REUSE=sync: each free synchronizes the device) the first free
 * after the fault returns it already, as the runtime's own free does. */
#include "cachealloc.h"
#include "gpu.h"

int main(int argc, char **argv)
{
    int synced = argc > 1 && strcmp(argv[1], "synced") == 0;
    gpuStream_t s;
    CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking)); /* plain frees wait for fences */
    void *a, *b, *c, *raw;
    CHECK(gpuMalloc(&a, 1 << 20));
    CHECK(gpuMalloc(&b, 1 << 20));
    cachealloc_nocache_begin();
    CHECK(gpuMalloc(&raw, 1 << 20));
    CHECK(gpuFree(raw));
    cachealloc_nocache_end();
    CHECK(gpuMemsetAsync(raw, 0, 256, s)); /* faults when it runs */
    /* Wait until it ran, without a call that would itself report the fault. */
    for (int i = 0; i < 10000 && sim_counters(0).faults == 0; i++)
        sleep_ms(1);
    EXPECT(sim_counters(0).faults == 1);
    if (synced) {
        gpuError_t e = gpuFree(a);
        printf("free after the fault: %d (expected %d)\n", (int)e, (int)gpuErrorIllegalAddress);
        return e == gpuErrorIllegalAddress ? 0 : 1;
    }
    CHECK(gpuFree(a));              /* the cache has not called the device since the fault */
    gpuError_t e = gpuMalloc(&c, 1 << 20); /* its fence's event sees the error */
    printf("allocation after the fault: %d\n", (int)e);
    e = gpuFree(b);
    printf("free after the cache saw the fault: %d (expected %d)\n", (int)e,
           (int)gpuErrorIllegalAddress);
    return e == gpuErrorIllegalAddress ? 0 : 1;
}
