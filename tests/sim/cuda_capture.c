/* cuda_capture.c: stream capture through NVIDIA's runtime over the simulated driver: a graph of
 * stream-ordered allocation, set, copy and free replays on launch; another thread's cudaMalloc
 * during a global capture fails and invalidates it, unless that thread is relaxed; a captured
 * event cannot be queried; the legacy stream cannot be used beside a blocking capture. */
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "check.h"

#define OK(call) CHECK_EQ((call), cudaSuccess)

static void replay(void)
{
    cudaStream_t s;
    char *p, *g = NULL, out[256];
    OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    OK(cudaMalloc((void **)&p, sizeof out));
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    enum cudaStreamCaptureStatus st;
    OK(cudaStreamIsCapturing(s, &st));
    CHECK_EQ(st, cudaStreamCaptureStatusActive);
    OK(cudaMallocAsync((void **)&g, sizeof out, s));
    OK(cudaMemsetAsync(g, 0x42, sizeof out, s));
    OK(cudaMemcpyAsync(p, g, sizeof out, cudaMemcpyDeviceToDevice, s));
    OK(cudaFreeAsync(g, s));
    cudaGraph_t graph;
    cudaGraphExec_t x;
    OK(cudaStreamEndCapture(s, &graph));
    OK(cudaGraphInstantiate(&x, graph, 0));
    OK(cudaMemset(p, 0, sizeof out));
    OK(cudaDeviceSynchronize());
    OK(cudaGraphLaunch(x, s));
    OK(cudaStreamSynchronize(s));
    OK(cudaMemcpy(out, p, sizeof out, cudaMemcpyDeviceToHost));
    CHECK_EQ(out[200], 0x42);
    OK(cudaGraphExecDestroy(x));
    OK(cudaGraphDestroy(graph));
    OK(cudaFree(p));
    OK(cudaStreamDestroy(s));
}

static int thread_mode = -1;

static void *alloc_thread(void *rc)
{
    void *p = NULL;
    if (thread_mode >= 0) {
        enum cudaStreamCaptureMode m = (enum cudaStreamCaptureMode)thread_mode;
        OK(cudaThreadExchangeStreamCaptureMode(&m));
    }
    *(cudaError_t *)rc = cudaMalloc(&p, 4096);
    if (p)
        OK(cudaFree(p));
    return NULL;
}

static cudaError_t alloc_elsewhere(int mode)
{
    cudaError_t rc = cudaErrorUnknown;
    pthread_t t;
    thread_mode = mode;
    CHECK_EQ(pthread_create(&t, NULL, alloc_thread, &rc), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    return rc;
}

static void other_thread(void)
{
    cudaStream_t s;
    cudaGraph_t graph = (cudaGraph_t)&graph;
    OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    OK(alloc_elsewhere(cudaStreamCaptureModeRelaxed));
    CHECK_EQ(alloc_elsewhere(-1), cudaErrorStreamCaptureUnsupported);
    CHECK_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
    CHECK(graph == NULL);
    OK(alloc_elsewhere(-1));
    OK(cudaStreamDestroy(s));
}

static void events_and_legacy(void)
{
    cudaStream_t s;
    cudaEvent_t e;
    cudaGraph_t graph;
    char *p;
    OK(cudaStreamCreate(&s));
    OK(cudaEventCreate(&e));
    OK(cudaMalloc((void **)&p, 64));
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    OK(cudaEventRecord(e, s));
    CHECK_EQ(cudaEventQuery(e), cudaErrorCapturedEvent);
    OK(cudaStreamEndCapture(s, &graph));
    OK(cudaGraphDestroy(graph));
    OK(cudaEventQuery(e));
    /* s is blocking: the legacy stream would depend on it. */
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CHECK_EQ(cudaMemsetAsync(p, 0, 64, cudaStreamLegacy), cudaErrorStreamCaptureImplicit);
    CHECK_EQ(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated);
    (void)cudaGetLastError();
    OK(cudaFree(p));
}

int main(void)
{
    sim_begin("simdevice cuda driver");
    replay();
    other_thread();
    events_and_legacy();
    printf("cuda_capture: all passed\n");
    return 0;
}
