/* drv_capture.c: the simulated driver's stream capture rules, one case per process: work given
 * to a capturing stream is recorded, not run; the three interaction modes decide which threads
 * may make unsafe calls; the legacy stream, synchronizations and captured events fail and
 * invalidate as cuda.h documents; the misuse errors of begin and end. */
#include "drv_capture_check.h"

static void count_up(void *n)
{
    __atomic_add_fetch((int *)n, 1, __ATOMIC_SEQ_CST);
}

/* A memset and a host function on a capturing stream neither run nor touch memory. */
static void recorded_not_run(void)
{
    CUstream s = cap_stream(CU_STREAM_DEFAULT);
    CUdeviceptr p;
    unsigned char h[256];
    int ran = 0;
    CU_OK(cuMemAlloc(&p, sizeof h));
    CU_OK(cuMemsetD8(p, 1, sizeof h));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_EQ(cap_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CU_OK(cuMemsetD8Async(p, 9, sizeof h, s));
    CU_OK(cuLaunchHostFunc(s, count_up, &ran));
    usleep(50 * 1000);
    CHECK_EQ(gate_flag(&ran), 0);
    CUgraph g = cap_end_ok(s);
    CHECK_EQ(cap_status(s), CU_STREAM_CAPTURE_STATUS_NONE);
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemcpyDtoH(h, p, sizeof h));
    CHECK_EQ(h[0], 1);
    CHECK_EQ(gate_flag(&ran), 0);
    CU_OK(cuGraphDestroy(g));
}

/* Global mode: another thread's cuMemAlloc fails and invalidates the capture. */
static void mode_global(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_EQ(cap_on_thread(cap_alloc_free, NULL, -1), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK_EQ(cap_status(s), CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    cap_end_invalidated(s);
    /* Once it ended, the same call is fine. */
    CU_OK(cap_on_thread(cap_alloc_free, NULL, -1));
}

/* Thread-local mode: other threads may allocate; the capturing thread may not. */
static void mode_thread_local(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CU_OK(cap_on_thread(cap_alloc_free, NULL, -1));
    CU_OK(cuGraphDestroy(cap_end_ok(s)));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK_EQ(cap_alloc_free(NULL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    cap_end_invalidated(s);
}

/* Relaxed mode: every thread may allocate, the capturing one included. */
static void mode_relaxed(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cap_alloc_free(NULL));
    CU_OK(cap_on_thread(cap_alloc_free, NULL, -1));
    CU_OK(cuGraphDestroy(cap_end_ok(s)));
}

static CUresult query_event(void *e)
{
    return cuEventQuery(e);
}

/* A thread's own mode: relaxed, it may allocate beside a global capture; global again, even an
 * event query (of an event recorded before the capture) fails and invalidates it. */
static void exchange_mode(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING), other = cap_stream(CU_STREAM_NON_BLOCKING);
    CUevent e;
    CU_OK(cuEventCreate(&e, CU_EVENT_DEFAULT));
    CU_OK(cuEventRecord(e, other));
    CU_OK(cuStreamSynchronize(other));
    CUstreamCaptureMode m = (CUstreamCaptureMode)7;
    CHECK_EQ(cuThreadExchangeStreamCaptureMode(&m), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuThreadExchangeStreamCaptureMode(NULL), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cap_on_thread(cap_alloc_free, NULL, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cap_on_thread(query_event, e, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    CHECK_EQ(cap_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CHECK_EQ(cap_on_thread(query_event, e, -1), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    cap_end_invalidated(s);
    /* The capturing thread's own exchange: relaxed, then back, handing out the old mode. */
    m = CU_STREAM_CAPTURE_MODE_RELAXED;
    CU_OK(cuThreadExchangeStreamCaptureMode(&m));
    CHECK_EQ(m, CU_STREAM_CAPTURE_MODE_GLOBAL);
    CU_OK(cuThreadExchangeStreamCaptureMode(&m));
    CHECK_EQ(m, CU_STREAM_CAPTURE_MODE_RELAXED);
}

/* The legacy stream while a blocking stream captures: its work fails with 906 and invalidates
 * the capture; asking whether it captures fails without invalidating; a non-blocking
 * capture leaves it alone. */
static void legacy_implicit(void)
{
    CUstream b = cap_stream(CU_STREAM_DEFAULT), nb = cap_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr p;
    CUstreamCaptureStatus st;
    CU_OK(cuMemAlloc(&p, 256));
    CU_OK(cuStreamBeginCapture(b, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_EQ(cuStreamIsCapturing(CU_STREAM_LEGACY, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    CHECK_EQ(cap_status(b), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CHECK_EQ(cuMemsetD8Async(p, 0, 256, CU_STREAM_LEGACY), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    cap_end_invalidated(b);

    CUevent e;
    CU_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuStreamBeginCapture(b, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_EQ(cuEventRecord(e, CU_STREAM_LEGACY), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    cap_end_invalidated(b);

    CU_OK(cuStreamBeginCapture(nb, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cuMemsetD8Async(p, 0, 256, CU_STREAM_LEGACY));
    CU_OK(cuEventRecord(e, CU_STREAM_LEGACY));
    CU_OK(cuGraphDestroy(cap_end_ok(nb)));
}

/* Synchronizing the device, or waiting for or querying a capturing stream, fails and
 * invalidates the capture, whatever its mode. */
static void synchronizations(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_EQ(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    cap_end_invalidated(s);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_EQ(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    cap_end_invalidated(s);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CHECK_EQ(cuStreamQuery(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    cap_end_invalidated(s);
    CU_OK(cuCtxSynchronize());
}

/* An event recorded in a capture belongs to it: no host query or wait while it is under way
 * (without invalidating it); once it ended, the event is complete. */
static void captured_event(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING);
    CUevent e;
    struct simdev_counters c0 = sim_counters(0);
    CU_OK(cuEventCreate(&e, CU_EVENT_DEFAULT));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cuEventRecord(e, s));
    CHECK_EQ(cuEventQuery(e), CUDA_ERROR_CAPTURED_EVENT);
    CHECK_EQ(cuEventSynchronize(e), CUDA_ERROR_CAPTURED_EVENT);
    CHECK_EQ(cap_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CU_OK(cuGraphDestroy(cap_end_ok(s)));
    CU_OK(cuEventQuery(e));
    CU_OK(cuEventSynchronize(e));
    CHECK_EQ(sim_counters(0).events_recorded, c0.events_recorded); /* never recorded on it */
}

static CUresult end_here(void *s)
{
    CUgraph g = NULL;
    CUresult rc = cuStreamEndCapture(s, &g);
    if (rc == CUDA_SUCCESS)
        cuGraphDestroy(g);
    return rc;
}

/* Begin and end misused: the legacy stream, twice, without a capture, from another thread. */
static void misuse(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING);
    CUgraph g = NULL;
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 256));
    CHECK_EQ(cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL),
             CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    CHECK_EQ(cuStreamBeginCapture(s, (CUstreamCaptureMode)3), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_EQ(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
    CHECK_EQ(cap_on_thread(end_here, s, CU_STREAM_CAPTURE_MODE_RELAXED),
             CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    /* Only graph memory may be freed in a capture; callbacks are not supported there. */
    CHECK_EQ(cuMemFreeAsync(p, s), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cap_status(s), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CU_OK(cuGraphDestroy(cap_end_ok(s)));
    /* A relaxed capture may be ended by any thread. */
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
    CU_OK(cap_on_thread(end_here, s, -1));
    CHECK_EQ(cap_status(s), CU_STREAM_CAPTURE_STATUS_NONE);
    CU_OK(cuMemFree(p));
}

static void callback(CUstream s, CUresult status, void *arg)
{
    (void)s, (void)status, (void)arg;
}

/* cuStreamAddCallback is not supported in a capture (cuLaunchHostFunc is). */
static void callbacks(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_EQ(cuStreamAddCallback(s, callback, NULL, 0), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    cap_end_invalidated(s);
}

static const struct sim_case cases[] = {
    {"recorded_not_run", recorded_not_run}, {"mode_global", mode_global},
    {"mode_thread_local", mode_thread_local}, {"mode_relaxed", mode_relaxed},
    {"exchange_mode", exchange_mode}, {"legacy_implicit", legacy_implicit},
    {"synchronizations", synchronizations}, {"captured_event", captured_event},
    {"misuse", misuse}, {"callbacks", callbacks},
};

int main(int argc, char **argv)
{
    drv_begin();
    drv_use_primary(0);
    return sim_run_case("drv_capture", argc, argv, cases, sizeof cases / sizeof cases[0]);
}
