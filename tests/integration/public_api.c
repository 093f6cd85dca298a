/* The optional public API (shim/cachealloc.h): statistics, reclaim, a no-caching region and a
 * caching region inside it. With the argument "absent" (run without the shim) every call must
 * be a harmless no-op. */
#include "cachealloc.h"
#include "gpu.h"

#define MiB (1u << 20)

static unsigned long long driver_allocs(void) { return simdev_allocs(sim_counters(-1)); }

int main(int argc, char **argv)
{
    int absent = argc > 1 && strcmp(argv[1], "absent") == 0;
    cachealloc_stats st;
    void *p = NULL;
    if (absent) {
        EXPECT(cachealloc_get_stats(0, &st) == 0);
        EXPECT(cachealloc_reclaim(-1) == 0);
        cachealloc_nocache_begin();
        cachealloc_region_begin("absent");
        cachealloc_region_end();
        cachealloc_nocache_end();
        CHECK(gpuMalloc(&p, MiB));
        CHECK(gpuFree(p));
        return 0;
    }
    CHECK(gpuMalloc(&p, 3 * MiB));
    CHECK(gpuFree(p));
    EXPECT(cachealloc_get_stats(0, &st) == 1);
    EXPECT(st.alloc_calls == 1 && st.free_calls == 1);
    EXPECT(st.cached_bytes > 0 && st.allocated_bytes == 0);
    EXPECT(st.reserved_bytes == st.cached_bytes + st.pending_bytes);
    /* The fields appended later: the driver call that grew the cache, and its time. */
    EXPECT(st.growths >= 1 && st.grow_ns > 0);

    /* Reclaim gives the cached segment back to the driver. */
    uint64_t released = cachealloc_reclaim(-1);
    EXPECT(released == st.reserved_bytes);
    EXPECT(cachealloc_get_stats(0, &st) == 1 && st.reserved_bytes == 0);

    /* Inside a no-caching region every allocation goes to the driver... */
    unsigned long long before = driver_allocs();
    cachealloc_nocache_begin();
    for (int i = 0; i < 3; i++) {
        CHECK(gpuMalloc(&p, MiB));
        CHECK(gpuFree(p));
    }
    EXPECT(driver_allocs() - before == 3);
    /* ...except inside a caching region nested in it. */
    before = driver_allocs();
    cachealloc_region_begin("workspace");
    for (int i = 0; i < 3; i++) {
        CHECK(gpuMalloc(&p, MiB));
        CHECK(gpuFree(p));
    }
    cachealloc_region_end();
    EXPECT(driver_allocs() - before == 1);
    cachealloc_nocache_end();
    printf("public API ok\n");
    return 0;
}
