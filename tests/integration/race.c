/* The cross-stream race. x is allocated and set on stream s1, read on a non-blocking stream s2
 * after a host function and a wait on s1's event, then freed without synchronization; a new
 * allocation on s1, set to another value at once, must not receive x's memory before s2 has
 * read it. Mode "async": cudaMallocAsync/cudaFreeAsync (x freed on s2, the stream that last used
 * it). Mode "plain": cudaMalloc/cudaFree, both streams non-blocking. Exit 0 when every read saw
 * x's value, 1 when a read saw the new allocation's value; with a second argument "expect-race"
 * the other way round (proof that the test detects a race where the contract allows one).
 * The copy's destination is pinned: into pageable memory a GPU's asynchronous copy returns only
 * when done, which would close the window the test looks through. */
#include <string.h>

#include "gpu.h"

#define N 4096
#define ITER_DEFAULT 100
#define DELAY_MS 20

int main(int argc, char **argv)
{
    int async = argc > 1 && strcmp(argv[1], "async") == 0;
    int iters = getenv("CA_RACE_ITERS") ? atoi(getenv("CA_RACE_ITERS")) : ITER_DEFAULT;
    gpuStream_t s1, s2;
    CHECK(gpuStreamCreateWithFlags(&s1, async ? 0 : gpuStreamNonBlocking));
    CHECK(gpuStreamCreateWithFlags(&s2, gpuStreamNonBlocking));
    gpuEvent_t ev;
    CHECK(gpuEventCreate(&ev));
    unsigned char *seen;
    CHECK(gpuMallocHost((void **)&seen, N));
    int bad = 0;
    for (int i = 0; i < iters; i++) {
        void *x, *y;
        if (async)
            CHECK(gpuMallocAsync(&x, N, s1));
        else
            CHECK(gpuMalloc(&x, N));
        CHECK(gpuMemsetAsync(x, 0xA1, N, s1));
        CHECK(gpuEventRecord(ev, s1));
        CHECK(gpu_host_sleep(s2, DELAY_MS));
        CHECK(gpuStreamWaitEvent(s2, ev, 0));
        CHECK(gpuMemcpyAsync(seen, x, N, gpuMemcpyDefault, s2));
        if (async)
            CHECK(gpuFreeAsync(x, s2));
        else
            CHECK(gpuFree(x));
        if (async)
            CHECK(gpuMallocAsync(&y, N, s1));
        else
            CHECK(gpuMalloc(&y, N));
        CHECK(gpuMemsetAsync(y, 0x5E, N, s1));
        CHECK(gpuStreamSynchronize(s2));
        CHECK(gpuStreamSynchronize(s1));
        for (int k = 0; k < N; k++) {
            if (seen[k] != 0xA1) {
                bad++;
                break;
            }
        }
        if (async)
            CHECK(gpuFreeAsync(y, s1));
        else
            CHECK(gpuFree(y));
    }
    CHECK(gpuDeviceSynchronize());
    CHECK(gpuFreeHost(seen));
    CHECK(gpuEventDestroy(ev));
    CHECK(gpuStreamDestroy(s1));
    CHECK(gpuStreamDestroy(s2));
    printf("%s race: %d of %d reads saw a reused block\n", async ? "async" : "plain", bad, iters);
    if (argc > 2 && strcmp(argv[2], "expect-race") == 0)
        return bad ? 0 : 1;
    return bad ? 1 : 0;
}
