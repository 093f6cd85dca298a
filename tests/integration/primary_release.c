/* A primary context's memory vanishing behind the runtime: the orders Numba's cuda.close() and
 * its test base classes use (driver API, -lcuda). The context is retained, a block is
 * allocated and freed (the cache keeps it), then:
 *   release-reset  pop, release to a count of zero (the driver frees the context's memory),
 *                  reset the inactive context;
 *   reset-release  reset while active, pop, release to zero;
 *   release        pop, release to zero;
 *   free-none      as release-reset, but the block is freed with no context current first.
 * Then the context is retained again and blocks of the same sizes are allocated, set and
 * copied back: each must be fresh memory that works, with the cache as without it (a cache that
 * kept the dead blocks hands one out, and the first set faults). */
#include <string.h>

#include <cuda.h>

#include "gpu.h"

#define MiB ((size_t)1 << 20)
static const size_t sizes[] = {4096, MiB, 3 * MiB, 24 * MiB};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static CUcontext retain_push(void)
{
    CUcontext c;
    CHECK(cuDevicePrimaryCtxRetain(&c, 0));
    CHECK(cuCtxPushCurrent(c));
    return c;
}

static void pop(void)
{
    CUcontext c;
    CHECK(cuCtxPopCurrent(&c));
}

static int active(void)
{
    unsigned flags;
    int on = -1;
    CHECK(cuDevicePrimaryCtxGetState(0, &flags, &on));
    return on;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "release-reset";
    CHECK(cuInit(0));
    retain_push();
    CUdeviceptr p[NSIZES];
    for (size_t i = 0; i < NSIZES; i++) {
        CHECK(cuMemAlloc(&p[i], sizes[i]));
        CHECK(cuMemsetD8(p[i], 0x11, sizes[i]));
    }
    CHECK(cuCtxSynchronize());
    if (strcmp(mode, "free-none") != 0)
        for (size_t i = 0; i < NSIZES; i++)
            CHECK(cuMemFree(p[i]));
    if (strcmp(mode, "reset-release") == 0) {
        CHECK(cuDevicePrimaryCtxReset(0));
        pop();
        CHECK(cuDevicePrimaryCtxRelease(0));
    } else {
        pop();
        if (strcmp(mode, "free-none") == 0) /* what Numba's pending deallocations do */
            for (size_t i = 0; i < NSIZES; i++)
                CHECK(cuMemFree(p[i]));
        CHECK(cuDevicePrimaryCtxRelease(0));
        EXPECT(active() == 0);
        if (strcmp(mode, "release") != 0)
            CHECK(cuDevicePrimaryCtxReset(0));
    }
    EXPECT(active() == 0);
    retain_push();
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < NSIZES; i++) {
            CUdeviceptr q;
            CHECK(cuMemAlloc(&q, sizes[i]));
            CHECK(cuMemsetD8(q, 0x5A, sizes[i]));
            unsigned char last = 0;
            CHECK(cuMemcpyDtoH(&last, q + sizes[i] - 1, 1));
            EXPECT(last == 0x5A);
            CHECK(cuMemFree(q));
        }
    }
    CHECK(cuCtxSynchronize());
    pop();
    CHECK(cuDevicePrimaryCtxRelease(0));
    printf("primary context %s: fresh memory after the context's memory went away\n", mode);
    return 0;
}
