/* The CUDA door's stream capture entry points: the begin and end of a capture and the thread's
 * interaction mode, each in the ABI versions and per-thread forms the runtime asks for. The
 * cache learns of captures here (capture.c): before the real begin the arena goes quiet, so
 * that none of its calls can land in the capture; after the end it may call the device again. */
#include <stddef.h>

#include "capture.h"
#include "cuda_abi.h"
#include "descriptor.h"
#include "init.h"
#include "served.h"

/* Exported, as every served entry point is (door.c declares them alike). */
#define DECLARE(name, base, version, flags, proto, params) CA_EXPORT ca_rt_err name params;
CUABI_SERVED(DECLARE)

typedef ca_rt_err (*begin_v1_fn)(cuabi_stream_t);
typedef ca_rt_err (*begin_v2_fn)(cuabi_stream_t, cuabi_capture_enum);
typedef ca_rt_err (*end_fn)(cuabi_stream_t, cuabi_graph_t *);
typedef ca_rt_err (*exchange_fn)(cuabi_capture_enum *);

/* mode < 0: CUDA 10.0's form, which takes none (and captures globally). */
static ca_rt_err begin(const char *name, cuabi_stream_t s, int mode, int ptsz)
{
    void (*f)(void) = ca_drv_real_fn(name);
    if (f == NULL)
        return CUABI_ERROR_NOT_FOUND;
    ca_runtime *rt = &ca_drv_rt;
    int open = ca_cache_ready(rt);
    if (open)
        ca_capture_will_begin(rt);
    ca_rt_err e = mode < 0 ? ((begin_v1_fn)f)(s) : ((begin_v2_fn)f)(s, (cuabi_capture_enum)mode);
    if (open)
        ca_capture_began(rt, s, ptsz, mode < 0 ? 0u : (unsigned)mode, e);
    return e;
}

static ca_rt_err end(const char *name, cuabi_stream_t s, cuabi_graph_t *graph, int ptsz)
{
    void (*f)(void) = ca_drv_real_fn(name);
    if (f == NULL)
        return CUABI_ERROR_NOT_FOUND;
    ca_rt_err e = ((end_fn)f)(s, graph);
    ca_runtime *rt = &ca_drv_rt;
    if (ca_cache_ready(rt))
        ca_capture_ended(rt, s, ptsz, e);
    return e;
}

/* Each form below goes to the real function of its own name: the driver gives each its own
 * semantics (CUDA 10.0's begin captures globally, _ptsz names the per-thread stream). */
ca_rt_err cuStreamBeginCapture(cuabi_stream_t s) { return begin("cuStreamBeginCapture", s, -1, 0); }
/* CUDA 10.0's begin, on the per-thread default stream. */
ca_rt_err cuStreamBeginCapture_ptsz(cuabi_stream_t s) { return begin("cuStreamBeginCapture_ptsz", s, -1, 1); }
/* The begin runtimes call since CUDA 10.1, with the program's capture mode. */
ca_rt_err cuStreamBeginCapture_v2(cuabi_stream_t s, cuabi_capture_enum m) { return begin("cuStreamBeginCapture_v2", s, (int)m, 0); }
/* The same on the per-thread default stream. */
ca_rt_err cuStreamBeginCapture_v2_ptsz(cuabi_stream_t s, cuabi_capture_enum m) { return begin("cuStreamBeginCapture_v2_ptsz", s, (int)m, 1); }
/* Once the stream captures no more, the cache's quiet ends (capture.h). */
ca_rt_err cuStreamEndCapture(cuabi_stream_t s, cuabi_graph_t *g) { return end("cuStreamEndCapture", s, g, 0); }
/* The same on the per-thread default stream. */
ca_rt_err cuStreamEndCapture_ptsz(cuabi_stream_t s, cuabi_graph_t *g) { return end("cuStreamEndCapture_ptsz", s, g, 1); }

/* The thread's new mode is noted only to name it in CACHEALLOC_VERBOSE's line at each begin:
 * the cache stays quiet in every mode. */
ca_rt_err cuThreadExchangeStreamCaptureMode(cuabi_capture_enum *mode)
{
    void (*f)(void) = ca_drv_real_fn("cuThreadExchangeStreamCaptureMode");
    if (f == NULL)
        return CUABI_ERROR_NOT_FOUND;
    cuabi_capture_enum want = mode != NULL ? *mode : 0;
    ca_rt_err e = ((exchange_fn)f)(mode);
    ca_runtime *rt = &ca_drv_rt;
    if (e == CUABI_SUCCESS && ca_cache_ready(rt))
        ca_capture_thread_mode(rt, want);
    return e;
}
