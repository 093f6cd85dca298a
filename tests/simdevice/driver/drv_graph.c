/* drv_graph.c: stream capture and graphs at the driver API, each entry point in the ABI
 * versions cudaTypedefs.h lists and, where the name has one, its per-thread-stream form. The
 * rules are the core's (core/sd_capture.c); docs/simdevice.md says what is modelled. */
#include "drv.h"

/* CUgraphEdgeData: 8 bytes, all zero for the plain dependencies capture makes. */
#define EDGE_DATA_SIZE 8

/* Instantiation flags whose effect is nothing here: upload (2) and node priorities (8). */
#define FLAGS_WITHOUT_EFFECT 0xAull

static CUresult begin(CUstream s, int mode, int ptsz)
{
    CUresult rc = drv_enter_live();
    return rc ? rc : drv_ret(sd_capture_begin(s, ptsz, mode));
}

/* Begins capturing a stream: its later work is recorded into a graph, not run. The CUDA 10.0
 * form has no mode: global. */
API CUresult cuStreamBeginCapture(CUstream s) { return begin(s, SD_CAPTURE_GLOBAL, 0); }
API CUresult cuStreamBeginCapture_ptsz(CUstream s) { return begin(s, SD_CAPTURE_GLOBAL, 1); }
API CUresult cuStreamBeginCapture_v2(CUstream s, int mode) { return begin(s, mode, 0); }
API CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, int mode) { return begin(s, mode, 1); }

static CUresult end(CUstream s, CUgraph *graph, int ptsz)
{
    CUresult rc = drv_enter();
    return rc ? rc : drv_ret(sd_capture_end(s, ptsz, graph));
}

/* Ends the capture the stream began, handing out its graph (NULL when invalidated). */
API CUresult cuStreamEndCapture(CUstream s, CUgraph *g) { return end(s, g, 0); }
API CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g) { return end(s, g, 1); }

static CUresult info(CUstream s, int *status, uint64_t *id, CUgraph *graph,
                     const CUgraphNode **deps, const void **edges, size_t *ndeps, int ptsz)
{
    CUresult rc = drv_enter();
    if (rc)
        return rc;
    if (edges && !deps) /* documented: edge data only beside the dependencies */
        return CUDA_ERROR_INVALID_VALUE;
    return drv_ret(sd_capture_info(s, ptsz, status, id, graph, (void *const **)deps, edges,
                                   EDGE_DATA_SIZE, ndeps));
}

/* A stream's capture status. */
API CUresult cuStreamIsCapturing(CUstream s, int *st) { return info(s, st, NULL, NULL, NULL, NULL, NULL, 0); }
API CUresult cuStreamIsCapturing_ptsz(CUstream s, int *st) { return info(s, st, NULL, NULL, NULL, NULL, NULL, 1); }
/* Status and the capture's id: the CUDA 10.1 form. */
API CUresult cuStreamGetCaptureInfo(CUstream s, int *st, uint64_t *id) { return info(s, st, id, NULL, NULL, NULL, NULL, 0); }
API CUresult cuStreamGetCaptureInfo_ptsz(CUstream s, int *st, uint64_t *id) { return info(s, st, id, NULL, NULL, NULL, NULL, 1); }
/* With the graph and the stream's current dependencies: the CUDA 11.3 form. */
API CUresult cuStreamGetCaptureInfo_v2(CUstream s, int *st, uint64_t *id, CUgraph *g, const CUgraphNode **d, size_t *n) { return info(s, st, id, g, d, NULL, n, 0); }
API CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream s, int *st, uint64_t *id, CUgraph *g, const CUgraphNode **d, size_t *n) { return info(s, st, id, g, d, NULL, n, 1); }
/* With edge data too: the CUDA 12.3 form. */
API CUresult cuStreamGetCaptureInfo_v3(CUstream s, int *st, uint64_t *id, CUgraph *g, const CUgraphNode **d, const void **e, size_t *n) { return info(s, st, id, g, d, e, n, 0); }
API CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream s, int *st, uint64_t *id, CUgraph *g, const CUgraphNode **d, const void **e, size_t *n) { return info(s, st, id, g, d, e, n, 1); }

/* Swaps the calling thread's capture interaction mode. */
API CUresult cuThreadExchangeStreamCaptureMode(int *mode)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    return drv_ret(sd_capture_exchange_mode(mode));
}

static CUresult instantiate(CUgraphExec *exec, CUgraph graph, unsigned long long flags)
{
    CUresult rc = drv_enter();
    if (rc)
        return rc;
    if (flags & ~FLAGS_WITHOUT_EFFECT) {
        sd_log("driver: graph instantiation flags %#llx are not modelled", flags);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return drv_ret(sd_graph_instantiate(exec, graph));
}

static CUresult instantiate_logged(CUgraphExec *exec, CUgraph graph, CUgraphNode *err_node,
                                   char *log, size_t log_size)
{
    if (err_node)
        *err_node = NULL;
    if (log && log_size)
        log[0] = '\0';
    return instantiate(exec, graph, 0);
}

/* Makes an executable graph: the CUDA 10.0 and 11.0 forms, with an error node and a log. */
API CUresult cuGraphInstantiate(CUgraphExec *x, CUgraph g, CUgraphNode *n, char *log, size_t len) { return instantiate_logged(x, g, n, log, len); }
API CUresult cuGraphInstantiate_v2(CUgraphExec *x, CUgraph g, CUgraphNode *n, char *log, size_t len) { return instantiate_logged(x, g, n, log, len); }
/* With flags: the CUDA 11.4 form. */
API CUresult cuGraphInstantiateWithFlags(CUgraphExec *x, CUgraph g, unsigned long long f) { return instantiate(x, g, f); }

static CUresult instantiate_params(CUgraphExec *exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    p->hErrNode_out = NULL;
    CUresult rc = instantiate(exec, graph, p->flags);
    p->result_out = rc == CUDA_SUCCESS ? 0 : 1; /* CUDA_GRAPH_INSTANTIATE_SUCCESS, _ERROR */
    return rc;
}

/* With a parameter block: the CUDA 12.0 form. */
API CUresult cuGraphInstantiateWithParams(CUgraphExec *x, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p) { return instantiate_params(x, g, p); }
API CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *x, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p) { return instantiate_params(x, g, p); }

static CUresult upload(CUgraphExec exec, CUstream s, int ptsz)
{
    (void)s, (void)ptsz;
    CUresult rc = drv_enter_live();
    return rc ? rc : drv_ret(sd_graph_exec_check(exec));
}

/* Uploading a graph ahead of its launch: nothing to do here. */
API CUresult cuGraphUpload(CUgraphExec x, CUstream s) { return upload(x, s, 0); }
API CUresult cuGraphUpload_ptsz(CUgraphExec x, CUstream s) { return upload(x, s, 1); }

static CUresult launch(CUgraphExec exec, CUstream s, int ptsz)
{
    CUresult rc = drv_enter_live();
    return rc ? rc : drv_ret(sd_graph_launch(exec, s, ptsz));
}

/* Queues an executable graph's nodes on a stream. */
API CUresult cuGraphLaunch(CUgraphExec x, CUstream s) { return launch(x, s, 0); }
API CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream s) { return launch(x, s, 1); }

/* Destroys an executable graph; launches already queued still run. */
API CUresult cuGraphExecDestroy(CUgraphExec x)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    return drv_ret(sd_graph_exec_destroy(x));
}

/* Destroys a graph; executable graphs made from it stay. */
API CUresult cuGraphDestroy(CUgraph g)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    return drv_ret(sd_graph_destroy(g));
}
