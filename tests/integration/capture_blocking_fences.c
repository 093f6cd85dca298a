/* A blocking stream captures while the capturing thread makes plain allocations and frees.
 * While a blocking stream captures, nothing may be given to the legacy stream, where the cache
 * records its fences (the driver would answer 906 and invalidate the capture): the cache must
 * serve them without a fence, and the capture ends with a graph that replays. */
#include "gpu_graph.h"

#define PAIRS 100

int main(void)
{
    gpuStream_t s;
    void *buf, *warm, *p;
    unsigned char host[256];
    CHECK(gpuStreamCreate(&s));
    CHECK(gpuMalloc(&buf, sizeof host));
    CHECK(gpuMalloc(&warm, 1024));
    CHECK(gpuFree(warm));
    CHECK(gpuMemset(buf, 0, sizeof host));
    CHECK(gpuDeviceSynchronize());

    CHECK(gpuStreamBeginCapture(s, gpuCaptureGlobal));
    CHECK(gpuMemsetAsync(buf, 0x3e, sizeof host, s));
    uint64_t before = gpu_driver_calls();
    for (int i = 0; i < PAIRS; i++) {
        CHECK(gpuMalloc(&p, 1024));
        CHECK(gpuFree(p));
    }
    EXPECT(gpu_driver_calls() == before);
    gpuGraphExec_t x = gpu_capture_end(s);

    CHECK(gpuGraphLaunch(x, s));
    CHECK(gpuStreamSynchronize(s));
    CHECK(gpuMemcpy(host, buf, sizeof host, gpuMemcpyDefault));
    EXPECT(host[0] == 0x3e);
    /* After the capture the frees made during it are fenced and reused as usual. */
    CHECK(gpuMalloc(&p, 1024));
    CHECK(gpuFree(p));
    CHECK(gpuGraphExecDestroy(x));
    CHECK(gpuFree(buf));
    printf("blocking capture valid beside %d plain allocation and free pairs\n", PAIRS);
    return 0;
}
