/* A graph whose capture allocates and frees stream-ordered memory (allocation and free nodes),
 * replayed again and again while the program allocates blocks of the same size from the cache
 * on the same stream: the graph's memory must never be one of the cache's blocks, or every
 * replay writes into memory the program holds. The cache holds a block of that size on that
 * stream before the capture, which a cache that served the capture would hand out. */
#include "gpu_graph.h"

#define N 4096
#define BLOCKS 16

int main(void)
{
    gpuStream_t s;
    void *warm, *in_graph = NULL, *mine[BLOCKS];
    static unsigned char host[N];
    CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
    CHECK(gpuMallocAsync(&warm, N, s));
    CHECK(gpuFreeAsync(warm, s));
    CHECK(gpuStreamSynchronize(s));

    CHECK(gpuStreamBeginCapture(s, gpuCaptureGlobal));
    CHECK(gpuMallocAsync(&in_graph, N, s));
    CHECK(gpuMemsetAsync(in_graph, 0xAB, N, s));
    CHECK(gpuFreeAsync(in_graph, s));
    gpuGraphExec_t x = gpu_capture_end(s);

    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < BLOCKS; i++) {
            CHECK(gpuMallocAsync(&mine[i], N, s));
            EXPECT(mine[i] != in_graph);
            CHECK(gpuMemsetAsync(mine[i], i + 1, N, s));
        }
        CHECK(gpuGraphLaunch(x, s));
        CHECK(gpuStreamSynchronize(s));
        for (int i = 0; i < BLOCKS; i++) {
            CHECK(gpuMemcpy(host, mine[i], N, gpuMemcpyDefault));
            EXPECT(host[0] == i + 1 && host[N - 1] == i + 1);
            CHECK(gpuFreeAsync(mine[i], s));
        }
    }
    CHECK(gpuGraphExecDestroy(x));
    CHECK(gpuStreamDestroy(s));
    printf("graph memory: never one of the cache's blocks over 4 replays\n");
    return 0;
}
