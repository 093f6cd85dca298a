/* gpu.h's names for stream capture and graphs, on the CUDA runtime, the CUDA driver API
 * (-DGPU_DRIVER) and HIP (-DGPU_HIP), so that the capture scenarios are written once. */
#ifndef CA_TEST_GPU_GRAPH_H
#define CA_TEST_GPU_GRAPH_H

#include "gpu.h"

#ifdef GPU_HIP
typedef hipGraph_t gpuGraph_t;
typedef hipGraphExec_t gpuGraphExec_t;
#define gpuCaptureGlobal hipStreamCaptureModeGlobal
#define gpuCaptureRelaxed hipStreamCaptureModeRelaxed
#define gpuErrorCaptureInvalidated hipErrorStreamCaptureInvalidated
#define gpuStreamBeginCapture hipStreamBeginCapture
#define gpuStreamEndCapture hipStreamEndCapture
#define gpuGraphInstantiate(x, g) hipGraphInstantiate((x), (g), NULL, NULL, 0)
#define gpuGraphLaunch hipGraphLaunch
#define gpuGraphExecDestroy hipGraphExecDestroy
#define gpuGraphDestroy hipGraphDestroy
#elif defined(GPU_DRIVER)
typedef CUgraph gpuGraph_t;
typedef CUgraphExec gpuGraphExec_t;
#define gpuCaptureGlobal CU_STREAM_CAPTURE_MODE_GLOBAL
#define gpuCaptureRelaxed CU_STREAM_CAPTURE_MODE_RELAXED
#define gpuErrorCaptureInvalidated CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
#define gpuStreamBeginCapture(s, m) GPU_DRV(cuStreamBeginCapture((s), (m)))
#define gpuStreamEndCapture(s, g) GPU_DRV(cuStreamEndCapture((s), (g)))
#define gpuGraphInstantiate(x, g) GPU_DRV(cuGraphInstantiate((x), (g), 0))
#define gpuGraphLaunch(x, s) GPU_DRV(cuGraphLaunch((x), (s)))
#define gpuGraphExecDestroy(x) GPU_DRV(cuGraphExecDestroy(x))
#define gpuGraphDestroy(g) GPU_DRV(cuGraphDestroy(g))
#else
typedef cudaGraph_t gpuGraph_t;
typedef cudaGraphExec_t gpuGraphExec_t;
#define gpuCaptureGlobal cudaStreamCaptureModeGlobal
#define gpuCaptureRelaxed cudaStreamCaptureModeRelaxed
#define gpuErrorCaptureInvalidated cudaErrorStreamCaptureInvalidated
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuGraphInstantiate(x, g) cudaGraphInstantiate((x), (g), 0)
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraphExecDestroy cudaGraphExecDestroy
#define gpuGraphDestroy cudaGraphDestroy
#endif

/* Ends the capture s began and makes it executable; exits when either fails. */
static inline gpuGraphExec_t gpu_capture_end(gpuStream_t s)
{
    gpuGraph_t g = NULL;
    gpuGraphExec_t x = NULL;
    gpuError_t e = gpuStreamEndCapture(s, &g);
    if (e != gpuSuccess) {
        fprintf(stderr, "the capture ended with error %d (900s: invalidated by a call it "
                        "forbids)\n", (int)e);
        exit(1);
    }
    CHECK(gpuGraphInstantiate(&x, g));
    CHECK(gpuGraphDestroy(g));
    return x;
}

/* The simulator's driver allocations and frees so far (device 0): what the cache asked of it. */
static inline uint64_t gpu_driver_calls(void)
{
    struct simdev_counters c = sim_counters(0);
    return simdev_allocs(c) + simdev_frees(c);
}

#endif
