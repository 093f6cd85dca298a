/* One stream, the same size allocated and freed 1000 times: the cache makes one driver
 * allocation and never synchronizes the device. With the argument "uncached" (run under
 * CACHEALLOC_POOL=none) every call must reach the driver instead, each free synchronizing.
 * With "synced" (CACHEALLOC_REUSE=sync) each free synchronizes the device, as the driver's
 * free does, and the driver still allocates once and frees nothing. */
#include "gpu.h"

int main(int argc, char **argv)
{
    int uncached = argc > 1 && strcmp(argv[1], "uncached") == 0;
    int synced = argc > 1 && strcmp(argv[1], "synced") == 0;
    struct simdev_counters before = sim_counters(-1);
    for (int i = 0; i < 1000; i++) {
        void *p;
        CHECK(gpuMalloc(&p, 1 << 20));
        CHECK(gpuMemsetAsync(p, i & 0xff, 1 << 20, 0));
        CHECK(gpuFree(p));
    }
    struct simdev_counters after = sim_counters(-1);
    printf("driver mallocs %llu, device syncs %llu\n",
           (unsigned long long)(simdev_allocs(after) - simdev_allocs(before)),
           (unsigned long long)(after.device_syncs - before.device_syncs));
    if (uncached) {
        EXPECT(simdev_allocs(after) - simdev_allocs(before) == 1000);
        EXPECT(simdev_frees(after) - simdev_frees(before) == 1000);
        EXPECT(after.device_syncs - before.device_syncs >= 1000);
        return 0;
    }
    EXPECT(simdev_allocs(after) - simdev_allocs(before) == 1);
    EXPECT(simdev_frees(after) - simdev_frees(before) == 0);
    EXPECT(after.device_syncs - before.device_syncs == (synced ? 1000 : 0));
    return 0;
}
