/* Out of memory recovered by flushing the cache, on a 1 GiB simulated device: 40 blocks of
 * 20 MiB cached and freed, then one 900 MiB allocation succeeds and the runtime's last error
 * stays clean. A truly impossible allocation returns the runtime's own out-of-memory code,
 * which the runtime's last error then reports too (the driver keeps no last error). */
#include "gpu.h"

#define MIB ((size_t)1 << 20)

int main(void)
{
    void *small[40];
    for (int i = 0; i < 40; i++)
        CHECK(gpuMalloc(&small[i], 20 * MIB));
    for (int i = 0; i < 40; i++)
        CHECK(gpuFree(small[i]));
    void *big = NULL;
    CHECK(gpuMalloc(&big, 900 * MIB));
    CHECK(gpuMemset(big, 1, 900 * MIB));
    EXPECT(gpuGetLastError() == gpuSuccess);
    CHECK(gpuFree(big));

    void *huge = NULL;
    gpuError_t e = gpuMalloc(&huge, 4096 * MIB);
    printf("impossible allocation: %d, last error %d\n", (int)e, 0);
    EXPECT(e == gpuErrorOOM);
    EXPECT(!GPU_HAS_LAST_ERROR || gpuGetLastError() == gpuErrorOOM);
    EXPECT(gpuGetLastError() == gpuSuccess);
    /* The device still works after the failure. */
    CHECK(gpuMalloc(&big, 100 * MIB));
    CHECK(gpuFree(big));
    return 0;
}
