/* hip_graph.c: stream capture and graphs, the calls ROCm 5.2 exports with the versions its
 * library gives them (hip_4.3 to hip_5.0), over the core's capture model. */
#include "hip_front.h"

typedef void *hipGraph_t;
typedef void *hipGraphExec_t;
typedef void *hipGraphNode_t;

/* Begins capturing a stream in a mode (0 global, 1 thread-local, 2 relaxed). */
API hipError_t hipStreamBeginCapture(hipStream_t s, int mode) { return hip_ret(sd_capture_begin(s, 0, mode)); }
/* Ends the capture the stream began; *g is NULL when it was invalidated. */
API hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t *g) { return hip_ret(sd_capture_end(s, 0, g)); }
/* The stream's capture status. */
API hipError_t hipStreamIsCapturing(hipStream_t s, int *st)
{
    return hip_ret(sd_capture_info(s, 0, st, NULL, NULL, NULL, NULL, 0, NULL));
}
/* Status and the capture's id. */
API hipError_t hipStreamGetCaptureInfo(hipStream_t s, int *st, unsigned long long *id)
{
    uint64_t v = 0;
    int rc = sd_capture_info(s, 0, st, &v, NULL, NULL, NULL, 0, NULL);
    if (!rc && id)
        *id = v;
    return hip_ret(rc);
}
/* Swaps the calling thread's capture interaction mode. */
API hipError_t hipThreadExchangeStreamCaptureMode(int *mode) { return hip_ret(sd_capture_exchange_mode(mode)); }

/* Makes an executable graph; no error node or log is ever written but an empty one. */
API hipError_t hipGraphInstantiate(hipGraphExec_t *x, hipGraph_t g, hipGraphNode_t *err, char *log,
                                   size_t len)
{
    if (err)
        *err = NULL;
    if (log && len)
        log[0] = '\0';
    return hip_ret(sd_graph_instantiate(x, g));
}
/* With flags: none has an effect here, so only 0 is accepted. */
API hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t *x, hipGraph_t g, unsigned long long f)
{
    return hip_ret(f ? SD_ENOTSUP : sd_graph_instantiate(x, g));
}
/* Queues an executable graph's nodes on a stream. */
API hipError_t hipGraphLaunch(hipGraphExec_t x, hipStream_t s) { return hip_ret(sd_graph_launch(x, s, 0)); }
/* Destroys an executable graph; launches already queued still run. */
API hipError_t hipGraphExecDestroy(hipGraphExec_t x) { return hip_ret(sd_graph_exec_destroy(x)); }
/* Destroys a graph. */
API hipError_t hipGraphDestroy(hipGraph_t g) { return hip_ret(sd_graph_destroy(g)); }
