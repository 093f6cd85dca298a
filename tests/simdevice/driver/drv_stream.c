/* drv_stream.c: streams, events, host functions and callbacks, and the library and launch
 * calls (kernels cannot run here: a launch is refused with CUDA_ERROR_NOT_SUPPORTED). */
#include <stdlib.h>

#include "drv.h"

typedef void (*CUhostFn)(void *arg);
typedef void (*CUstreamCallback)(CUstream s, CUresult status, void *arg);

/* Creates a stream in the current context; flag 1 is non-blocking. */
API CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_stream_create(s, flags, 0));
}

/* Creates a stream with a priority (recorded, not modelled). */
API CUresult cuStreamCreateWithPriority(CUstream *s, unsigned flags, int priority)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_stream_create(s, flags, priority));
}

/* Destroys a stream; work already queued still runs. */
API CUresult cuStreamDestroy_v2(CUstream s)
{
    CUresult rc = drv_enter_or_none(0);
    return rc ? rc : drv_ret(sd_stream_destroy(s));
}

static CUresult stream_sync(CUstream s, int ptsz)
{
    CUresult rc = drv_enter();
    return rc ? rc : drv_ret(sd_stream_sync(s, ptsz));
}

static CUresult stream_query(CUstream s, int ptsz)
{
    CUresult rc = drv_enter();
    return rc ? rc : drv_ret(sd_stream_query(s, ptsz));
}

static CUresult stream_wait(CUstream s, CUevent e, unsigned flags, int ptsz)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_stream_wait_event(s, e, flags, ptsz));
}

static CUresult stream_flags(CUstream s, unsigned *flags, int ptsz)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_stream_flags(s, ptsz, flags));
}

static CUresult stream_priority(CUstream s, int *prio, int ptsz)
{
    unsigned flags;
    CUresult rc = stream_flags(s, &flags, ptsz);
    if (!rc && !prio)
        rc = CUDA_ERROR_INVALID_VALUE;
    if (!rc)
        *prio = 0;
    return rc;
}

static CUresult stream_ctx(CUstream s, CUcontext *pctx, int ptsz)
{
    unsigned flags;
    CUresult rc = stream_flags(s, &flags, ptsz);
    if (rc)
        return rc;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    void *owner;
    *pctx = sd_stream_owner(s, &owner) == SD_OK && owner ? owner : drv_current();
    return CUDA_SUCCESS;
}

static CUresult host_func(CUstream s, CUhostFn fn, void *arg, int ptsz)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_host_func(s, ptsz, fn, arg));
}

static CUresult add_callback(CUstream s, CUstreamCallback cb, void *arg, unsigned flags, int ptsz)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_stream_callback(s, ptsz, (sd_callback)(void (*)(void))cb, arg, flags));
}

/* Stream calls, each in its legacy and per-thread-default-stream (_ptsz) form. */
API CUresult cuStreamSynchronize(CUstream s) { return stream_sync(s, 0); }
API CUresult cuStreamSynchronize_ptsz(CUstream s) { return stream_sync(s, 1); }
API CUresult cuStreamQuery(CUstream s) { return stream_query(s, 0); }
API CUresult cuStreamQuery_ptsz(CUstream s) { return stream_query(s, 1); }
API CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned f) { return stream_wait(s, e, f, 0); }
API CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned f) { return stream_wait(s, e, f, 1); }
API CUresult cuStreamGetFlags(CUstream s, unsigned *f) { return stream_flags(s, f, 0); }
API CUresult cuStreamGetFlags_ptsz(CUstream s, unsigned *f) { return stream_flags(s, f, 1); }
API CUresult cuStreamGetPriority(CUstream s, int *p) { return stream_priority(s, p, 0); }
API CUresult cuStreamGetPriority_ptsz(CUstream s, int *p) { return stream_priority(s, p, 1); }
API CUresult cuStreamGetCtx(CUstream s, CUcontext *c) { return stream_ctx(s, c, 0); }
API CUresult cuStreamGetCtx_ptsz(CUstream s, CUcontext *c) { return stream_ctx(s, c, 1); }
API CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void *a) { return host_func(s, fn, a, 0); }
API CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void *a) { return host_func(s, fn, a, 1); }
API CUresult cuStreamAddCallback(CUstream s, CUstreamCallback cb, void *a, unsigned f) { return add_callback(s, cb, a, f, 0); }
API CUresult cuStreamAddCallback_ptsz(CUstream s, CUstreamCallback cb, void *a, unsigned f) { return add_callback(s, cb, a, f, 1); }

/* CUDA 12.5 forms of cuStreamGetCtx: green contexts do not exist here. */
API CUresult cuStreamGetCtx_v2(CUstream s, CUcontext *c, void **green)
{
    if (green)
        *green = NULL;
    return stream_ctx(s, c, 0);
}
API CUresult cuStreamGetCtx_v2_ptsz(CUstream s, CUcontext *c, void **green)
{
    if (green)
        *green = NULL;
    return stream_ctx(s, c, 1);
}

/* Creates an event; flags: 1 blocking sync, 2 disable timing, 4 interprocess. */
API CUresult cuEventCreate(CUevent *e, unsigned flags)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_event_create(e, flags));
}

static CUresult record(CUevent e, CUstream s, int ptsz)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_event_record(e, s, ptsz));
}

/* Records an event on a stream. */
API CUresult cuEventRecord(CUevent e, CUstream s) { return record(e, s, 0); }
API CUresult cuEventRecord_ptsz(CUevent e, CUstream s) { return record(e, s, 1); }
/* Records with flags; only the default (0) is modelled. */
API CUresult cuEventRecordWithFlags(CUevent e, CUstream s, unsigned f) { return f ? CUDA_ERROR_NOT_SUPPORTED : record(e, s, 0); }
API CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned f) { return f ? CUDA_ERROR_NOT_SUPPORTED : record(e, s, 1); }

/* CUDA_ERROR_NOT_READY while the event's last record is queued. */
API CUresult cuEventQuery(CUevent e)
{
    CUresult rc = drv_enter();
    return rc ? rc : drv_ret(sd_event_query(e));
}

/* Waits until the event's last record has been reached. */
API CUresult cuEventSynchronize(CUevent e)
{
    CUresult rc = drv_enter();
    return rc ? rc : drv_ret(sd_event_sync(e));
}

/* Destroys an event (a pending record still completes). */
API CUresult cuEventDestroy_v2(CUevent e)
{
    CUresult rc = drv_enter();
    return rc ? rc : drv_ret(sd_event_destroy(e));
}

/* Milliseconds between two completed events. */
API CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_event_elapsed(ms, a, b));
}

/* CUDA 12.8 form: the same measurement. */
API CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b)
{
    return cuEventElapsedTime(ms, a, b);
}

/* A library is accepted and kept as an opaque handle; its code never runs here. */
struct drv_library {
    const void *code;
};

/* Loads a fat binary or cubin image (accepted, never run). */
API CUresult cuLibraryLoadData(void **lib, const void *code, void *jo, void **jv, unsigned njo,
                               void *lo, void **lv, unsigned nlo)
{
    (void)jo, (void)jv, (void)njo, (void)lo, (void)lv, (void)nlo;
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!lib || !code)
        return CUDA_ERROR_INVALID_VALUE;
    struct drv_library *l = malloc(sizeof *l);
    if (!l)
        return CUDA_ERROR_OUT_OF_MEMORY;
    l->code = code;
    *lib = l;
    return CUDA_SUCCESS;
}

/* Unloads a library. */
API CUresult cuLibraryUnload(void *lib)
{
    if (!lib)
        return CUDA_ERROR_INVALID_VALUE;
    free(lib);
    return CUDA_SUCCESS;
}

/* A kernel handle for any name: the failure comes at launch, where a GPU would run it. */
API CUresult cuLibraryGetKernel(void **kernel, void *lib, const char *name)
{
    if (!kernel || !lib || !name)
        return CUDA_ERROR_INVALID_VALUE;
    *kernel = lib;
    return CUDA_SUCCESS;
}

/* The function of a kernel handle (the same opaque handle). */
API CUresult cuKernelGetFunction(void **fn, void *kernel)
{
    if (!fn || !kernel)
        return CUDA_ERROR_INVALID_VALUE;
    *fn = kernel;
    return CUDA_SUCCESS;
}

static CUresult launch(const char *what)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_launch_refused(what));
}

/* Kernel launches: refused, device code never runs on the simulator. */
API CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned shm, CUstream s, void **params,
                            void **extra)
{
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shm, (void)s;
    (void)params, (void)extra;
    return launch("cuLaunchKernel");
}
API CUresult cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned shm, CUstream s,
                                 void **params, void **extra)
{
    return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shm, s, params, extra);
}
API CUresult cuLaunchKernelEx(const void *config, void *f, void **params, void **extra)
{
    (void)config, (void)f, (void)params, (void)extra;
    return launch("cuLaunchKernelEx");
}
API CUresult cuLaunchKernelEx_ptsz(const void *config, void *f, void **params, void **extra)
{
    return cuLaunchKernelEx(config, f, params, extra);
}
