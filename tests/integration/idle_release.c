/* Memory a program leaves unused goes back to the device: after its last free, with
 * CACHEALLOC_IDLE_RELEASE=1 (and the statistics' monitor thread on), the cache gives the
 * segment back within a few seconds; "kept" expects it still held over the same wait
 * (CACHEALLOC_IDLE_RELEASE=0). A block the program still holds is never touched. */
#include <stdbool.h>
#include <time.h>

#include "../../shim/cachealloc.h"
#include "gpu.h"

#define MIB ((size_t)1 << 20)

static uint64_t reserved(void)
{
    cachealloc_stats s;
    EXPECT(cachealloc_get_stats(0, &s) == 1);
    return s.reserved_bytes;
}

int main(int argc, char **argv)
{
    bool kept = argc > 1 && strcmp(argv[1], "kept") == 0;
    gpu_own_stats_dir();
    void *live = NULL, *p = NULL;
    CHECK(gpuMalloc(&live, 4 * MIB));
    CHECK(gpuMemset(live, 0x6B, 4 * MIB));
    CHECK(gpuMalloc(&p, 64 * MIB));
    CHECK(gpuMemset(p, 0, 64 * MIB));
    uint64_t held = reserved();
    CHECK(gpuFree(p));
    CHECK(gpuDeviceSynchronize());
    uint64_t now = held;
    for (int i = 0; i < 40 && now + 64 * MIB > held; i++) { /* up to 4 s */
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        now = reserved();
    }
    bool released = now + 64 * MIB <= held;
    unsigned char last = 0;
    CHECK(gpuMemcpy(&last, (char *)live + 4 * MIB - 1, 1, gpuMemcpyDefault));
    printf("64 MiB left unused %s; the live block reads 0x%02X\n",
           released ? "went back to the device" : "stayed in the cache", last);
    CHECK(gpuFree(live));
    return released != kept && last == 0x6B ? 0 : 1;
}
