/* One ca_backend for every runtime: each call goes through the descriptor's real functions.
 * The arena names a device for each call, which may not be the calling thread's current
 * device (a free of another device's block, a reclaim of all devices): every device-bound call
 * switches to that device and back, so the program never sees its current device change. */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "lane.h"
#include "streams.h"

_Thread_local __attribute__((tls_model("initial-exec"))) int ca_real_call_depth;

/* Every real call of the backend runs with the depth raised (see backend.h) and the thread's
 * lanes held, so that a door the runtime reaches from there passes through without the lane
 * checking the depth itself. */
#define REAL(call)                      \
    __extension__({                     \
        uint64_t held_[CA_RT_COUNT];    \
        ca_lane_hold(held_);            \
        ca_real_call_depth++;           \
        ca_rt_err real_ = (call);       \
        ca_real_call_depth--;           \
        ca_lane_resume(held_);          \
        real_;                          \
    })

/* enter_device's answer when there is nothing to restore. */
#define UNCHANGED INT_MIN

/* Make dev current; returns the device to restore (which may be the driver's "no context"
 * slot, a negative number), or UNCHANGED. */
static int enter_device(ca_runtime *rt, int dev)
{
    int cur;
    if (rt->fn.get_device(&cur) != rt->codes.success || cur == dev)
        return UNCHANGED;
    rt->fn.set_device(dev);
    return cur;
}

static void leave_device(ca_runtime *rt, int prev)
{
    if (prev != UNCHANGED)
        rt->fn.set_device(prev);
}

/* Errors after which every later call of the device fails (CUDA's and HIP's numbers agree):
 * an illegal address, the hardware exceptions, a failed launch. */
static int sticky_code(ca_rt_err e)
{
    return e == 700 || (e >= 714 && e <= 719);
}

/* Remembers a sticky error one of the cache's own calls on dev returned (see runtime.h). */
static ca_rt_err noted(ca_runtime *rt, int dev, ca_rt_err e)
{
    if (sticky_code(e) && dev >= 0 && dev < CA_MAX_DEVICES) {
        atomic_store_explicit(&rt->sticky[dev], e, memory_order_relaxed);
        ca_lane_invalidate(); /* lanes were armed on devices without one */
    }
    return e;
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

/* The real call `call` made with dev current (and the caller's device restored), a sticky
 * error it returned noted, answered as the arena's status: every device-bound backend call. */
#define ON_DEVICE(rt, dev, call)                                        \
    __extension__({                                                     \
        int prev_ = enter_device((rt), (dev));                          \
        ca_rt_err e_ = noted((rt), (dev), REAL(call));                  \
        leave_device((rt), prev_);                                      \
        to_status((rt), e_);                                            \
    })

static int be_alloc(void *ctx, int dev, size_t size, void **out)
{
    ca_runtime *rt = ctx;
    return ON_DEVICE(rt, dev, rt->fn.malloc(out, size));
}

static int be_release(void *ctx, int dev, void *ptr)
{
    ca_runtime *rt = ctx;
    return ON_DEVICE(rt, dev, rt->fn.free(ptr));
}

static int be_event_create(void *ctx, int dev, ca_event_t *out)
{
    ca_runtime *rt = ctx;
    return ON_DEVICE(rt, dev, rt->fn.event_create_with_flags(out, rt->event_flags));
}

static int be_event_destroy(void *ctx, int dev, ca_event_t ev)
{
    ca_runtime *rt = ctx;
    return ON_DEVICE(rt, dev, rt->fn.event_destroy(ev));
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
    ca_rt_err e = noted(rt, dev, REAL(rt->fn.event_record(ev, ca_stream_handle(rt, s))));
    leave_device(rt, prev);
    return to_status(rt, e);
}

/* A runtime whose queries record "not ready" as the last error (HIP): the cache's own query
 * must neither show up in the program's next check nor replace an error the program has not
 * read yet. False when such an error is pending: the query waits for a later look. */
static bool may_query(ca_runtime *rt)
{
    return rt->fn.peek_last_error == NULL || REAL(rt->fn.peek_last_error()) == rt->codes.success;
}

/* A query's answer as the arena takes it: 1 complete, 0 not yet, -1 an error. */
static int query_answer(ca_runtime *rt, int dev, ca_rt_err e)
{
    e = noted(rt, dev, e);
    if (e == rt->codes.success)
        return 1;
    if (e == rt->codes.not_ready) {
        if (rt->fn.peek_last_error != NULL)
            (void)REAL(rt->fn.get_last_error()); /* only the cache's own "not ready" */
        return 0;
    }
    return -1;
}

static int be_event_query(void *ctx, int dev, ca_event_t ev)
{
    ca_runtime *rt = ctx;
    if (!may_query(rt))
        return 0;
    /* Events are not bound to the current device for a query: no switch needed. */
    return query_answer(rt, dev, REAL(rt->fn.event_query(ev)));
}

static int be_stream_query(void *ctx, int dev, ca_stream_t s)
{
    ca_runtime *rt = ctx;
    if (!ca_stream_nameable(s) || !may_query(rt))
        return 0;
    int prev = enter_device(rt, dev);
    int done = query_answer(rt, dev, REAL(rt->fn.stream_query(ca_stream_handle(rt, s))));
    leave_device(rt, prev);
    return done;
}

static int be_event_synchronize(void *ctx, int dev, ca_event_t ev)
{
    ca_runtime *rt = ctx;
    ca_rt_err e = noted(rt, dev, REAL(rt->fn.event_synchronize(ev)));
    return to_status(rt, e);
}

static int be_stream_wait_event(void *ctx, int dev, ca_stream_t s, ca_event_t ev)
{
    ca_runtime *rt = ctx;
    if (!ca_stream_nameable(s))
        return CA_ERR_BACKEND;
    int prev = enter_device(rt, dev);
    ca_rt_err e = noted(rt, dev, REAL(rt->fn.stream_wait_event(ca_stream_handle(rt, s), ev, 0)));
    leave_device(rt, prev);
    return to_status(rt, e);
}

static int be_device_synchronize(void *ctx, int dev)
{
    ca_runtime *rt = ctx;
    return ON_DEVICE(rt, dev, rt->fn.device_synchronize());
}

static int be_mem_info(void *ctx, int dev, size_t *free_bytes, size_t *total_bytes)
{
    ca_runtime *rt = ctx;
    return ON_DEVICE(rt, dev, rt->fn.mem_get_info(free_bytes, total_bytes));
}

static void be_clear_error(void *ctx)
{
    ca_runtime *rt = ctx;
    ca_rt_err e = REAL(rt->fn.get_last_error());
    (void)e;
}

/* Make dev current (*prev as enter_device) and fill the runtime's VMM property for the
 * device it names (a context's device for CUDA), whose ordinal goes to *ordinal. Nonzero, dev
 * left, when there is none. */
static int vmm_enter(ca_runtime *rt, int dev, ca_rt_vmm_desc *desc, int *ordinal, int *prev)
{
    *ordinal = -1;
    *prev = enter_device(rt, dev);
    if (rt->fn.device_ordinal(ordinal) != rt->codes.success || *ordinal < 0) {
        leave_device(rt, *prev);
        return -1;
    }
    *desc = (ca_rt_vmm_desc){0};
    rt->vmm_desc(*ordinal, desc);
    return 0;
}

static int be_vmm_granularity(void *ctx, int dev, size_t *out)
{
    ca_runtime *rt = ctx;
    ca_rt_vmm_desc desc;
    int ordinal, prev;
    if (vmm_enter(rt, dev, &desc, &ordinal, &prev) != 0)
        return CA_ERR_BACKEND;
    /* The minimum: the recommended one may be larger, and pages are the unit given back. */
    ca_rt_err e = noted(rt, dev, REAL(rt->fn.mem_get_granularity(out, desc.prop, 0)));
    leave_device(rt, prev);
    return to_status(rt, e);
}

static int be_vmm_reserve(void *ctx, int dev, size_t size, void **out)
{
    ca_runtime *rt = ctx;
    return ON_DEVICE(rt, dev, rt->fn.mem_address_reserve(out, size, 0, NULL, 0));
}

static int be_vmm_free(void *ctx, int dev, void *base, size_t size)
{
    ca_runtime *rt = ctx;
    return ON_DEVICE(rt, dev, rt->fn.mem_address_free(base, size));
}

static int be_vmm_create(void *ctx, int dev, size_t size, uint64_t *handle)
{
    ca_runtime *rt = ctx;
    ca_rt_vmm_desc desc;
    int ordinal, prev;
    if (vmm_enter(rt, dev, &desc, &ordinal, &prev) != 0)
        return CA_ERR_BACKEND;
    void *h = NULL;
    ca_rt_err e = noted(rt, dev, REAL(rt->fn.mem_create(&h, size, desc.prop, 0)));
    leave_device(rt, prev);
    *handle = (uint64_t)(uintptr_t)h;
    return to_status(rt, e);
}

static int be_vmm_release(void *ctx, int dev, uint64_t handle)
{
    ca_runtime *rt = ctx;
    return ON_DEVICE(rt, dev, rt->fn.mem_release((void *)(uintptr_t)handle));
}

static int be_vmm_map(void *ctx, int dev, void *addr, size_t size, uint64_t handle)
{
    ca_runtime *rt = ctx;
    return ON_DEVICE(rt, dev, rt->fn.mem_map(addr, size, 0, (void *)(uintptr_t)handle, 0));
}

static int be_vmm_unmap(void *ctx, int dev, void *addr, size_t size)
{
    ca_runtime *rt = ctx;
    return ON_DEVICE(rt, dev, rt->fn.mem_unmap(addr, size));
}

/* Sets the access of device `who` (-1: the owner itself) to dev's mappings that make up
 * [addr, addr+size): read-write or none. The descriptor has both runtimes' layout
 * (ca_rt_access_desc), and the call is made on dev, the memory's owner, as every VMM call is. */
static int set_access(ca_runtime *rt, int dev, void *addr, size_t size, int who, bool rw)
{
    ca_rt_vmm_desc desc;
    int ordinal, prev;
    if (vmm_enter(rt, dev, &desc, &ordinal, &prev) != 0)
        return CA_ERR_BACKEND;
    ca_rt_access_desc access = {.location = {CA_RT_LOCATION_DEVICE, who < 0 ? ordinal : who},
                                .flags = rw ? CA_RT_ACCESS_READWRITE : CA_RT_ACCESS_NONE};
    ca_rt_err e = noted(rt, dev, REAL(rt->fn.mem_set_access(addr, size, &access, 1)));
    leave_device(rt, prev);
    return to_status(rt, e);
}

/* The owning device's own access. */
static int be_vmm_set_access(void *ctx, int dev, void *addr, size_t size)
{
    return set_access(ctx, dev, addr, size, -1, true);
}

/* A program's cudaDeviceEnablePeerAccess does not reach mapped memory (FBGEMM pull request
 * 1875 is PyTorch's users working around that): the arena passes it on. */
static int be_vmm_peer_access(void *ctx, int dev, void *addr, size_t size, int peer, bool on)
{
    return set_access(ctx, dev, addr, size, peer, on);
}

int ca_backend_export_fd(ca_runtime *rt, int dev, void *addr)
{
    const ca_rt_fns *f = &rt->fn;
    if (!f->mem_retain_handle || !f->mem_export_handle || !f->mem_release)
        return -1;
    int prev = enter_device(rt, dev);
    void *h = NULL;
    int fd = -1;
    if (REAL(f->mem_retain_handle(&h, addr)) == rt->codes.success) {
        if (REAL(f->mem_export_handle(&fd, h, CA_RT_HANDLE_POSIX_FD, 0)) != rt->codes.success)
            fd = -1;
        ca_rt_err e = REAL(f->mem_release(h)); /* the retain's reference; the mapping keeps its own */
        (void)e;
    }
    leave_device(rt, prev);
    return fd;
}

int ca_backend_identify(ca_runtime *rt, int dev, char *uuid, size_t ulen, char *pci,
                        size_t plen)
{
    const ca_rt_fns *f = &rt->fn;
    int ordinal = -1, v[3];
    unsigned char u[16];
    uuid[0] = pci[0] = '\0';
    if (!f->device_ordinal)
        return -1;
    int prev = enter_device(rt, dev);
    if (REAL(f->device_ordinal(&ordinal)) == rt->codes.success && ordinal >= 0) {
        if (f->device_uuid && REAL(f->device_uuid(u, ordinal)) == rt->codes.success)
            snprintf(uuid, ulen,
                     "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                     u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
                     u[12], u[13], u[14], u[15]);
        int got = 0;
        for (int i = 0; f->device_attribute && i < 3; i++)
            got += REAL(f->device_attribute(&v[i], rt->pci_attrs[i], ordinal)) ==
                       rt->codes.success && v[i] >= 0;
        if (got == 3)
            snprintf(pci, plen, "%08X:%02X:%02X.0", (unsigned)v[2], (unsigned)v[0],
                     (unsigned)v[1]);
    }
    leave_device(rt, prev);
    return uuid[0] || pci[0] ? 0 : -1;
}

int ca_backend_has_vmm(const ca_runtime *rt)
{
    const ca_rt_fns *f = &rt->fn;
    return rt->vmm_desc && f->device_ordinal && f->mem_address_reserve && f->mem_address_free &&
           f->mem_create && f->mem_release && f->mem_map && f->mem_unmap && f->mem_set_access &&
           f->mem_get_granularity;
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
        .stream_query = rt->fn.stream_query ? be_stream_query : NULL,
        .device_synchronize = be_device_synchronize,
        .mem_info = be_mem_info,
        .clear_error = be_clear_error,
    };
    if (ca_backend_has_vmm(rt)) {
        be->vmm_granularity = be_vmm_granularity;
        be->vmm_reserve = be_vmm_reserve;
        be->vmm_free = be_vmm_free;
        be->vmm_create = be_vmm_create;
        be->vmm_release = be_vmm_release;
        be->vmm_map = be_vmm_map;
        be->vmm_unmap = be_vmm_unmap;
        be->vmm_set_access = be_vmm_set_access;
        be->vmm_peer_access = be_vmm_peer_access;
    }
}
