/* One ca_backend for every runtime: each call goes through the descriptor's real functions.
 * The arena names a device for each call, which may not be the calling thread's current
 * device (a free of another device's block, a reclaim of all devices): every device-bound call
 * switches to that device and back, so the program never sees its current device change. */
#include "backend.h"
#include "driver_ctx.h"
#include "streams.h"

/* Make dev current; returns the device to restore, or -1 when nothing changed. A driver
 * thread that had no current context (CA_SLOT_NONE) gets none back. */
static int enter_device(ca_runtime *rt, int dev)
{
    int cur = -1;
    if (rt->fn.get_device(&cur) != rt->codes.success)
        cur = -1;
    if (cur == dev)
        return -1;
    rt->fn.set_device(dev);
    return cur;
}

static void leave_device(ca_runtime *rt, int prev)
{
    if (prev >= 0 || prev == CA_SLOT_NONE)
        rt->fn.set_device(prev);
}

static int to_status(const ca_runtime *rt, ca_rt_err e)
{
    if (e == rt->codes.success)
        return CA_OK;
    if (e == rt->codes.out_of_memory)
        return CA_ERR_OOM;
    if (e == rt->codes.invalid_value || e == rt->codes.invalid_device_pointer)
        return CA_ERR_INVALID;
    return CA_ERR_BACKEND;
}

static int be_alloc(void *ctx, int dev, size_t size, void **out)
{
    ca_runtime *rt = ctx;
    int prev = enter_device(rt, dev);
    ca_rt_err e = rt->fn.malloc(out, size);
    leave_device(rt, prev);
    return to_status(rt, e);
}

static int be_release(void *ctx, int dev, void *ptr)
{
    ca_runtime *rt = ctx;
    int prev = enter_device(rt, dev);
    ca_rt_err e = rt->fn.free(ptr);
    leave_device(rt, prev);
    return to_status(rt, e);
}

static int be_event_create(void *ctx, int dev, ca_event_t *out)
{
    ca_runtime *rt = ctx;
    int prev = enter_device(rt, dev);
    ca_rt_err e = rt->fn.event_create_with_flags(out, rt->event_flags);
    leave_device(rt, prev);
    return to_status(rt, e);
}

static int be_event_destroy(void *ctx, int dev, ca_event_t ev)
{
    ca_runtime *rt = ctx;
    int prev = enter_device(rt, dev);
    ca_rt_err e = rt->fn.event_destroy(ev);
    leave_device(rt, prev);
    return to_status(rt, e);
}

/* The arena records events on every pool of a device from whichever thread calls it; the
 * runtime's per-thread handle would name the caller's own stream, not the pool's. Such a call
 * fails, as the arena expects for a stream the calling thread cannot name. */
static int be_event_record(void *ctx, int dev, ca_event_t ev, ca_stream_t s)
{
    ca_runtime *rt = ctx;
    if (!ca_stream_nameable(s))
        return CA_ERR_BACKEND;
    int prev = enter_device(rt, dev);
    ca_rt_err e = rt->fn.event_record(ev, ca_stream_handle(rt, s));
    leave_device(rt, prev);
    return to_status(rt, e);
}

static int be_event_query(void *ctx, int dev, ca_event_t ev)
{
    ca_runtime *rt = ctx;
    /* Events are not bound to the current device for a query: no switch needed. */
    (void)dev;
    ca_rt_err e = rt->fn.event_query(ev);
    if (e == rt->codes.success)
        return 1;
    if (e == rt->codes.not_ready)
        return 0;
    return -1;
}

static int be_event_synchronize(void *ctx, int dev, ca_event_t ev)
{
    ca_runtime *rt = ctx;
    (void)dev;
    return to_status(rt, rt->fn.event_synchronize(ev));
}

static int be_stream_wait_event(void *ctx, int dev, ca_stream_t s, ca_event_t ev)
{
    ca_runtime *rt = ctx;
    if (!ca_stream_nameable(s))
        return CA_ERR_BACKEND;
    int prev = enter_device(rt, dev);
    ca_rt_err e = rt->fn.stream_wait_event(ca_stream_handle(rt, s), ev, 0);
    leave_device(rt, prev);
    return to_status(rt, e);
}

static int be_device_synchronize(void *ctx, int dev)
{
    ca_runtime *rt = ctx;
    int prev = enter_device(rt, dev);
    ca_rt_err e = rt->fn.device_synchronize();
    leave_device(rt, prev);
    return to_status(rt, e);
}

static int be_mem_info(void *ctx, int dev, size_t *free_bytes, size_t *total_bytes)
{
    ca_runtime *rt = ctx;
    int prev = enter_device(rt, dev);
    ca_rt_err e = rt->fn.mem_get_info(free_bytes, total_bytes);
    leave_device(rt, prev);
    return to_status(rt, e);
}

static void be_clear_error(void *ctx)
{
    ca_runtime *rt = ctx;
    (void)rt->fn.get_last_error();
}

void ca_backend_make(ca_runtime *rt, ca_backend *be)
{
    *be = (ca_backend){
        .ctx = rt,
        .alloc = be_alloc,
        .release = be_release,
        .event_create = be_event_create,
        .event_destroy = be_event_destroy,
        .event_record = be_event_record,
        .event_query = be_event_query,
        .event_synchronize = be_event_synchronize,
        .stream_wait_event = be_stream_wait_event,
        .device_synchronize = be_device_synchronize,
        .mem_info = be_mem_info,
        .clear_error = be_clear_error,
    };
}
