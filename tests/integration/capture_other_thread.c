/* A global-mode capture stays valid while another host thread makes plain allocations and
 * frees: the cache serves them from blocks it holds, with no call that the capture forbids to
 * other threads (an event query, a fence, a synchronization, a driver allocation or free), so
 * the capture ends with a graph that replays. What it holds is a segment another stream's
 * pool freed, wholly free and known safe once the device was synchronized: a plain allocation
 * takes it over, where a cache that polled its pools' events first would query one. */
#include <pthread.h>

#include "gpu_graph.h"

#define PAIRS 200

static gpuError_t worker_rc = gpuSuccess;

static void *worker(void *unused)
{
    (void)unused;
    for (int i = 0; i < PAIRS && worker_rc == gpuSuccess; i++) {
        void *p = NULL;
        if ((worker_rc = gpuMalloc(&p, 512 * (size_t)(1 + i % 16))) == gpuSuccess)
            worker_rc = gpuFree(p);
    }
    return NULL;
}

int main(void)
{
    gpuStream_t s, u;
    void *buf, *warm;
    unsigned char host[256];
    CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
    CHECK(gpuStreamCreateWithFlags(&u, gpuStreamNonBlocking));
    /* 12 MiB: a segment of its own size, so that the plain pool keeps no free block. */
    CHECK(gpuMalloc(&buf, (size_t)12 << 20));
    CHECK(gpuMallocAsync(&warm, 512, u));
    CHECK(gpuFreeAsync(warm, u));
    CHECK(gpuMemset(buf, 0, sizeof host));
    CHECK(gpuDeviceSynchronize());

    CHECK(gpuStreamBeginCapture(s, gpuCaptureGlobal));
    CHECK(gpuMemsetAsync(buf, 0x5c, sizeof host, s));
    uint64_t before = gpu_driver_calls();
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, worker, NULL) == 0);
    EXPECT(pthread_join(t, NULL) == 0);
    CHECK(worker_rc);
    EXPECT(gpu_driver_calls() == before); /* served by the cache */
    gpuGraphExec_t x = gpu_capture_end(s);

    CHECK(gpuGraphLaunch(x, s));
    CHECK(gpuStreamSynchronize(s));
    CHECK(gpuMemcpy(host, buf, sizeof host, gpuMemcpyDefault));
    EXPECT(host[0] == 0x5c && host[sizeof host - 1] == 0x5c);
    CHECK(gpuGraphExecDestroy(x));
    CHECK(gpuFree(buf));
    printf("global capture valid beside %d served allocation and free pairs\n", PAIRS);
    return 0;
}
