/* hip_capture.c: stream capture in the HIP stand-in: captured sets and copies replay on launch,
 * a hipMalloc during a global capture fails with hipErrorStreamCaptureUnsupported and
 * invalidates it, and the ROCm 5.2 entry points carry their versions. */
#include <hip/hip_runtime_api.h>

#include "check.h"

#define OK(call) CHECK_EQ((call), hipSuccess)

int main(void)
{
    sim_begin("simdevice hip");
    CHECK(dlvsym(RTLD_DEFAULT, "hipStreamBeginCapture", "hip_4.3") != NULL);
    CHECK(dlvsym(RTLD_DEFAULT, "hipStreamGetCaptureInfo", "hip_4.5") != NULL);
    CHECK(dlvsym(RTLD_DEFAULT, "hipThreadExchangeStreamCaptureMode", "hip_5.0") != NULL);
    hipStream_t s;
    char *p, out[128];
    OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
    OK(hipMalloc((void **)&p, sizeof out));
    OK(hipMemset(p, 0, sizeof out));
    OK(hipDeviceSynchronize());
    OK(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
    hipStreamCaptureStatus st;
    OK(hipStreamIsCapturing(s, &st));
    CHECK_EQ(st, hipStreamCaptureStatusActive);
    OK(hipMemsetAsync(p, 9, sizeof out, s));
    hipGraph_t graph = NULL;
    hipGraphExec_t x;
    OK(hipStreamEndCapture(s, &graph));
    OK(hipMemcpy(out, p, sizeof out, hipMemcpyDeviceToHost));
    CHECK_EQ(out[5], 0); /* recorded, not run */
    OK(hipGraphInstantiate(&x, graph, NULL, NULL, 0));
    OK(hipGraphLaunch(x, s));
    OK(hipStreamSynchronize(s));
    OK(hipMemcpy(out, p, sizeof out, hipMemcpyDeviceToHost));
    CHECK_EQ(out[5], 9);
    OK(hipGraphExecDestroy(x));
    OK(hipGraphDestroy(graph));

    OK(hipStreamBeginCapture(s, hipStreamCaptureModeGlobal));
    void *q;
    CHECK_EQ(hipMalloc(&q, 64), hipErrorStreamCaptureUnsupported);
    CHECK_EQ(hipStreamEndCapture(s, &graph), hipErrorStreamCaptureInvalidated);
    CHECK(graph == NULL);
    CHECK_EQ(hipGetLastError(), hipErrorStreamCaptureInvalidated);
    OK(hipFree(p));
    printf("hip_capture: all passed\n");
    return 0;
}
