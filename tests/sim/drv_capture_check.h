/* drv_capture_check.h: what the stream-capture tests of the simulated driver share: streams,
 * ending a capture with or without a graph, and running one driver call on another thread. */
#ifndef SIM_DRV_CAPTURE_CHECK_H
#define SIM_DRV_CAPTURE_CHECK_H

#include <pthread.h>

#include "drv_check.h"

static inline CUstream cap_stream(unsigned flags)
{
    CUstream s;
    CU_OK(cuStreamCreate(&s, flags));
    return s;
}

/* Ends the capture s began; it must give a graph. */
static inline CUgraph cap_end_ok(CUstream s)
{
    CUgraph g = NULL;
    CU_OK(cuStreamEndCapture(s, &g));
    CHECK(g != NULL);
    return g;
}

/* Ends the capture s began; it must have been invalidated. */
static inline void cap_end_invalidated(CUstream s)
{
    CUgraph g = (CUgraph)&g;
    CHECK_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    CHECK(g == NULL);
}

static inline CUstreamCaptureStatus cap_status(CUstream s)
{
    CUstreamCaptureStatus st = (CUstreamCaptureStatus)-1;
    CU_OK(cuStreamIsCapturing(s, &st));
    return st;
}

/* One call made by a second host thread with device 0's primary context current; `mode`, when
 * not negative, is exchanged in first. */
struct cap_call {
    CUresult (*fn)(void *arg);
    void *arg;
    int mode;
    CUresult rc;
};

static inline void *cap_thread_main(void *p)
{
    struct cap_call *c = p;
    drv_use_primary(0);
    if (c->mode >= 0) {
        CUstreamCaptureMode m = (CUstreamCaptureMode)c->mode;
        CU_OK(cuThreadExchangeStreamCaptureMode(&m));
        CHECK_EQ(m, CU_STREAM_CAPTURE_MODE_GLOBAL); /* every thread starts global */
    }
    c->rc = c->fn(c->arg);
    return NULL;
}

/* The result of fn(arg) run on another thread in capture interaction mode `mode` (-1: the
 * thread's default). */
static inline CUresult cap_on_thread(CUresult (*fn)(void *), void *arg, int mode)
{
    struct cap_call c = {fn, arg, mode, CUDA_ERROR_UNKNOWN};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, cap_thread_main, &c), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    return c.rc;
}

/* cuMemAlloc and cuMemFree of 4 KiB: the unsafe calls a capture may forbid. */
static inline CUresult cap_alloc_free(void *unused)
{
    (void)unused;
    CUdeviceptr p;
    CUresult rc = cuMemAlloc(&p, 4096);
    return rc ? rc : cuMemFree(p);
}

#endif
