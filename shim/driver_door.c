/* The CUDA door. Every copy of NVIDIA's runtime in the process (the shared libcudart, or the
 * static runtime inside the program and inside cuBLAS, cuDNN, NCCL...) and every driver-API
 * program reaches the driver through dlsym and cuGetProcAddress: the shim answers both with its
 * own entry points for the calls the cache serves, each only in place of the exact ABI variant
 * the caller asked for (legacy or per-thread stream, and never a newer version), and exports
 * the same entry points by name for programs linked with -lcuda. The logic is front.c's, over
 * this descriptor of the driver, whose "devices" are context slots (driver_ctx.c). */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "cuda_abi.h"
#include "driver_ctx.h"
#include "driver_door.h"
#include "driver_pools.h"
#include "driver_real.h"
#include "front.h"
#include "front_lane.h"
#include "init.h"
#include "real.h"
#include "real_dlsym.h"
#include "streams.h"

typedef ca_rt_err (*gpa_v1_fn)(const char *symbol, void **pfn, int version, uint64_t flags);
typedef ca_rt_err (*gpa_v2_fn)(const char *symbol, void **pfn, int version, uint64_t flags,
                               unsigned *status);

#define DECLARE(name, base, version, flags, proto, params) CA_EXPORT ca_rt_err name params;
CUABI_SERVED(DECLARE)

enum {
#define INDEX(name, base, version, flags, proto, params) I_##name,
    CUABI_SERVED(INDEX) N_SERVED
};

typedef struct served {
    const char *name, *base;
    int version, flags;
    void (*wrapper)(void);
} served;

static const served table[N_SERVED] = {
#define ROW(name, base, version, flags, proto, params) {#name, base, version, flags, (void (*)(void))name},
    CUABI_SERVED(ROW)
};

/* The real entry point behind each served one: what the real lookup answers (filled once),
 * and what the real dlsym answered for its exported name, where a runtime asked that way. A
 * driver may hand out different addresses for the same function by the two ways. */
static _Atomic(void *) real[N_SERVED];
static _Atomic(void *) named[N_SERVED];
static atomic_int reals_loaded;

static void *fn_ptr(void (*f)(void))
{
    void *p;
    memcpy(&p, &f, sizeof p);
    return p;
}

static void load_reals(void)
{
    if (atomic_load_explicit(&reals_loaded, memory_order_acquire))
        return;
    for (int i = 0; i < N_SERVED; i++) {
        void *p = ca_drv_lookup(table[i].base, table[i].version, table[i].flags, table[i].name);
        if (p != NULL)
            atomic_store_explicit(&real[i], p, memory_order_release);
    }
    atomic_store_explicit(&reals_loaded, 1, memory_order_release);
}

/* The real function of served index i, as type T. */
#define REAL(T, i) ((T)real_of(i))
static void (*real_of(int i))(void)
{
    load_reals();
    void *p = atomic_load_explicit(&real[i], memory_order_acquire);
    if (p == NULL)
        p = atomic_load_explicit(&named[i], memory_order_acquire);
    void (*f)(void);
    memcpy(&f, &p, sizeof f);
    return f;
}

int ca_drv_served_index(const char *name)
{
    for (int i = 0; i < N_SERVED; i++)
        if (strcmp(table[i].name, name) == 0)
            return i;
    return -1;
}

void (*ca_drv_real_fn(const char *name))(void)
{
    int i = ca_drv_served_index(name);
    return i < 0 ? NULL : real_of(i);
}

void *ca_drv_served_dlsym(int i, void *handle, const char *name)
{
    void *p = ca_real_dlsym()(handle, name);
    if (p == NULL || p == fn_ptr(table[i].wrapper))
        return p;
    ca_drv_note(handle, name, p);
    atomic_store_explicit(&named[i], p, memory_order_release);
    return fn_ptr(table[i].wrapper);
}

/* A real lookup's answer replaced by the shim's entry point when it is exactly the variant
 * the shim serves under that name. */
static void swap(const char *symbol, void **pfn, int version)
{
    if (symbol == NULL || pfn == NULL || *pfn == NULL)
        return;
    /* The lookup itself is told apart by the version asked: the runtime must get the shim's
     * lookup back, or its later lookups go past the shim (the driver may answer with an
     * internal address that no other way shows). */
    if (strcmp(symbol, "cuGetProcAddress") == 0) {
        if (version >= 11030)
            *pfn = fn_ptr(table[version >= 12000 ? I_cuGetProcAddress_v2 : I_cuGetProcAddress].wrapper);
        return;
    }
    load_reals();
    for (int i = 0; i < N_SERVED; i++)
        if ((*pfn == atomic_load_explicit(&real[i], memory_order_acquire) ||
             *pfn == atomic_load_explicit(&named[i], memory_order_acquire)) &&
            strcmp(table[i].base, symbol) == 0) {
            *pfn = fn_ptr(table[i].wrapper);
            return;
        }
}


static ca_rt_err drv_get_last_error(void)
{
    return 0; /* the driver keeps no last error */
}

static int drv_resolve(ca_runtime *rt);

/* Pinned memory on device `ordinal`, read-write for it. */
static void drv_vmm_desc(int ordinal, ca_rt_vmm_desc *out)
{
    cuabi_mem_prop prop = {.type = CUABI_MEM_ALLOCATION_TYPE_PINNED,
                           .location = {CUABI_MEM_LOCATION_TYPE_DEVICE, ordinal}};
    cuabi_access_desc access = {.location = {CUABI_MEM_LOCATION_TYPE_DEVICE, ordinal},
                                .flags = CUABI_MEM_ACCESS_FLAGS_PROT_READWRITE};
    _Static_assert(sizeof prop <= sizeof out->prop && sizeof access <= sizeof out->access,
                   "VMM structures fit the descriptor");
    memcpy(out->prop, &prop, sizeof prop);
    memcpy(out->access, &access, sizeof access);
}

static ca_runtime drv_rt = {
    .api = "cuda",
    .door = "CUDA at the driver API",
    .real_what = "driver",
    .found_how = ca_drv_found_how,
    .tool_env = "CUDA_INJECTION64_PATH", /* compute-sanitizer, Nsight Systems and Compute */
    .syms = (const ca_rt_sym[]){{offsetof(ca_rt_fns, malloc), "cuMemAlloc_v2", 1}, {0, NULL, 0}},
    .resolve = drv_resolve,
    .codes = {
        .success = CUABI_SUCCESS,
        .invalid_value = CUABI_ERROR_INVALID_VALUE,
        .out_of_memory = CUABI_ERROR_OUT_OF_MEMORY,
        .not_initialized = CUABI_ERROR_NOT_INITIALIZED,
        .not_ready = CUABI_ERROR_NOT_READY,
        .invalid_device_pointer = CUABI_ERROR_INVALID_VALUE,
    },
    .legacy_stream = (void *)CUABI_STREAM_LEGACY_VALUE,
    .per_thread_stream = (void *)CUABI_STREAM_PER_THREAD_VALUE,
    .stream_nonblocking = CUABI_STREAM_NON_BLOCKING,
    .event_flags = CUABI_EVENT_DISABLE_TIMING,
    .vmm_desc = drv_vmm_desc,
    .slot = CA_RT_CUDA,
    .init_lock = PTHREAD_MUTEX_INITIALIZER,
};

ca_runtime *ca_drv_descriptor(void)
{
    return &drv_rt;
}

#define PUT(field, value)                                    \
    do {                                                     \
        void *p_ = (value);                                  \
        memcpy(&rt->fn.field, &p_, sizeof p_);               \
        missing |= p_ == NULL;                               \
    } while (0)
#define OPT(field, value)                                    \
    do {                                                     \
        void *p_ = (value);                                  \
        memcpy(&rt->fn.field, &p_, sizeof p_);               \
    } while (0)
#define LOOK(base, version, flags, exported) ca_drv_lookup(base, version, flags, exported)
#define VMM(name) LOOK(name, CUABI_VMM_VERSION, CUABI_GPA_LEGACY, name)

/* The driver's functions in the runtime-shaped descriptor: the same calling conventions (a
 * CUdeviceptr is passed as a pointer is), the context slot in place of the device. */
static int drv_resolve(ca_runtime *rt)
{
    load_reals();
    if (atomic_load(&real[I_cuMemAlloc_v2]) == NULL && atomic_load(&named[I_cuMemAlloc_v2]) == NULL)
        return CA_REAL_ABSENT;
    /* Without the context functions the cache cannot work: calls pass through. */
    int missing = ca_drv_fns_get() == NULL;
    PUT(malloc, fn_ptr(real_of(I_cuMemAlloc_v2)));
    PUT(free, fn_ptr(real_of(I_cuMemFree_v2)));
    OPT(malloc_async, fn_ptr(real_of(I_cuMemAllocAsync)));
    OPT(free_async, fn_ptr(real_of(I_cuMemFreeAsync)));
    OPT(malloc_async_ptsz, fn_ptr(real_of(I_cuMemAllocAsync_ptsz)));
    OPT(free_async_ptsz, fn_ptr(real_of(I_cuMemFreeAsync_ptsz)));
    PUT(mem_get_info, fn_ptr(real_of(I_cuMemGetInfo_v2)));
    PUT(device_synchronize, fn_ptr(real_of(I_cuCtxSynchronize)));
    PUT(stream_create_with_flags, fn_ptr(real_of(I_cuStreamCreate)));
    PUT(stream_create_with_priority, fn_ptr(real_of(I_cuStreamCreateWithPriority)));
    PUT(stream_destroy, fn_ptr(real_of(I_cuStreamDestroy_v2)));
    PUT(event_create_with_flags, LOOK("cuEventCreate", 2000, CUABI_GPA_LEGACY, "cuEventCreate"));
    PUT(event_record, LOOK("cuEventRecord", 2000, CUABI_GPA_LEGACY, "cuEventRecord"));
    PUT(event_query, LOOK("cuEventQuery", 2000, CUABI_GPA_LEGACY, "cuEventQuery"));
    PUT(event_synchronize, LOOK("cuEventSynchronize", 2000, CUABI_GPA_LEGACY, "cuEventSynchronize"));
    PUT(event_destroy, LOOK("cuEventDestroy", 4000, CUABI_GPA_LEGACY, "cuEventDestroy_v2"));
    PUT(stream_wait_event, LOOK("cuStreamWaitEvent", 3020, CUABI_GPA_LEGACY, "cuStreamWaitEvent"));
    OPT(stream_get_flags, LOOK("cuStreamGetFlags", 5050, CUABI_GPA_LEGACY, "cuStreamGetFlags"));
    OPT(stream_query, LOOK("cuStreamQuery", 2000, CUABI_GPA_LEGACY, "cuStreamQuery"));
    /* Expandable segments: through the real lookup, never the shim's own entry points. */
    OPT(mem_address_reserve, VMM("cuMemAddressReserve"));
    OPT(mem_address_free, VMM("cuMemAddressFree"));
    OPT(mem_create, VMM("cuMemCreate"));
    OPT(mem_release, VMM("cuMemRelease"));
    OPT(mem_map, VMM("cuMemMap"));
    OPT(mem_unmap, VMM("cuMemUnmap"));
    OPT(mem_set_access, VMM("cuMemSetAccess"));
    OPT(mem_get_granularity, VMM("cuMemGetAllocationGranularity"));
    if (!missing)
        OPT(device_ordinal, fn_ptr((void (*)(void))ca_drv_fns_get()->ctx_get_device));
    OPT(stream_is_capturing, LOOK("cuStreamIsCapturing", 10000, CUABI_GPA_LEGACY, "cuStreamIsCapturing"));
    OPT(stream_is_capturing_ptsz, LOOK("cuStreamIsCapturing", 10000, CUABI_GPA_PER_THREAD,
                                       "cuStreamIsCapturing_ptsz"));
    if (!missing)
        OPT(current, fn_ptr((void (*)(void))ca_drv_fns_get()->ctx_get_current));
    rt->fn.get_device = ca_drv_get_slot;
    rt->fn.set_device = ca_drv_set_slot;
    rt->fn.get_last_error = drv_get_last_error;
    return missing ? CA_REAL_INCOMPLETE : CA_REAL_OK;
}

/* Serves cuMemAlloc_v2. */
ca_rt_err cuMemAlloc_v2(cuabi_deviceptr *p, size_t n) { return ca_front_malloc(&drv_rt, (void **)p, n); }
/* Serves cuMemFree_v2. */
ca_rt_err cuMemFree_v2(cuabi_deviceptr p) { return ca_front_free(&drv_rt, (void *)(uintptr_t)p); }
/* A stream-ordered allocation: the cache's where the program left the stream's device its
 * default pool, else the real driver's (driver_pools.c). */
static ca_rt_err alloc_async(cuabi_deviceptr *p, size_t n, cuabi_stream_t s, int ptsz)
{
    if (ca_drv_pool_passthrough(s)) {
        ca_rt_err (*real_alloc)(cuabi_deviceptr *, size_t, cuabi_stream_t) =
            REAL(ca_rt_err(*)(cuabi_deviceptr *, size_t, cuabi_stream_t),
                 ptsz ? I_cuMemAllocAsync_ptsz : I_cuMemAllocAsync);
        if (real_alloc != NULL)
            return real_alloc(p, n, s);
    }
    return ca_front_malloc_async(&drv_rt, (void **)p, n, s, ptsz);
}

/* Serves cuMemAllocAsync. */
ca_rt_err cuMemAllocAsync(cuabi_deviceptr *p, size_t n, cuabi_stream_t s) { return alloc_async(p, n, s, 0); }
/* Serves cuMemAllocAsync_ptsz. */
ca_rt_err cuMemAllocAsync_ptsz(cuabi_deviceptr *p, size_t n, cuabi_stream_t s) { return alloc_async(p, n, s, 1); }
/* Serves cuMemFreeAsync. */
ca_rt_err cuMemFreeAsync(cuabi_deviceptr p, cuabi_stream_t s) { return ca_front_free_async(&drv_rt, (void *)(uintptr_t)p, s, 0); }
/* Serves cuMemFreeAsync_ptsz. */
ca_rt_err cuMemFreeAsync_ptsz(cuabi_deviceptr p, cuabi_stream_t s) { return ca_front_free_async(&drv_rt, (void *)(uintptr_t)p, s, 1); }
/* Serves cuMemGetInfo_v2: cached bytes count as free. */
ca_rt_err cuMemGetInfo_v2(size_t *f, size_t *t) { return ca_front_mem_get_info(&drv_rt, f, t); }
/* Sees stream creation. */
ca_rt_err cuStreamCreate(cuabi_stream_t *s, unsigned flags) { return ca_front_stream_create(&drv_rt, CA_CTOR_FLAGS, (void **)s, flags, 0); }
/* Sees stream creation. */
ca_rt_err cuStreamCreateWithPriority(cuabi_stream_t *s, unsigned flags, int priority) { return ca_front_stream_create(&drv_rt, CA_CTOR_PRIORITY, (void **)s, flags, priority); }
/* Sees stream destruction. */
ca_rt_err cuStreamDestroy_v2(cuabi_stream_t s) { return ca_front_stream_destroy(&drv_rt, s); }
/* A context synchronization completes the fences of its slot. */
ca_rt_err cuCtxSynchronize(void) { return ca_front_device_synchronize(&drv_rt); }

/* CUDA 13's form, of a given context (NULL: the current one). */
ca_rt_err cuCtxSynchronize_v2(cuabi_context_t ctx)
{
    ca_rt_err (*sync)(cuabi_context_t) = REAL(ca_rt_err(*)(cuabi_context_t), I_cuCtxSynchronize_v2);
    if (sync == NULL)
        return CUABI_ERROR_NOT_FOUND;
    int slot = -1;
    if (ca_door_open(&drv_rt) != 0 ||
        (ctx != NULL ? (slot = ca_drv_slot_of(ctx)) : (ca_drv_get_slot(&slot), slot)) < 0)
        return sync(ctx);
    uint64_t token = ca_device_sync_begin(drv_rt.arena, slot);
    ca_rt_err e = sync(ctx);
    if (e == 0)
        ca_device_synchronized(drv_rt.arena, slot, token);
    return e;
}

/* The context of `slot` lost its memory: the cache forgets what it held there. */
static void forget_slot(int slot)
{
    ca_front_forget_device(&drv_rt, slot);
}

static ca_rt_err primary_reset(ca_rt_err (*reset)(int), int dev)
{
    if (reset == NULL)
        return CUABI_ERROR_NOT_FOUND;
    if (ca_door_open(&drv_rt) != 0)
        return reset(dev);
    void *ctx = ca_drv_primary_of(dev);
    int slot = ctx != NULL ? ca_drv_slot_of(ctx) : -1;
    if (slot >= 0)
        ca_device_resetting(drv_rt.arena, slot);
    ca_rt_err e = reset(dev);
    if (e == 0 && slot >= 0)
        forget_slot(slot);
    return e;
}

/* A primary context reset (cudaDeviceReset) frees its memory: the cache forgets it. */
ca_rt_err cuDevicePrimaryCtxReset(int dev) { return primary_reset(REAL(ca_rt_err(*)(int), I_cuDevicePrimaryCtxReset), dev); }
/* The same, CUDA 11 form. */
ca_rt_err cuDevicePrimaryCtxReset_v2(int dev) { return primary_reset(REAL(ca_rt_err(*)(int), I_cuDevicePrimaryCtxReset_v2), dev); }

/* A destroyed context's memory is gone: the cache forgets it, and its slot is free again. */
ca_rt_err cuCtxDestroy_v2(cuabi_context_t ctx)
{
    ca_rt_err (*destroy)(cuabi_context_t) = REAL(ca_rt_err(*)(cuabi_context_t), I_cuCtxDestroy_v2);
    if (destroy == NULL)
        return CUABI_ERROR_NOT_FOUND;
    int slot = ca_door_open(&drv_rt) == 0 ? ca_drv_slot_of(ctx) : -1;
    if (slot >= 0)
        ca_device_resetting(drv_rt.arena, slot);
    ca_rt_err e = destroy(ctx);
    if (e == 0 && slot >= 0) {
        forget_slot(slot);
        ca_drv_slot_drop(slot);
    }
    return e;
}

/* The lookup every runtime uses: the real answer, with the served entry points put in. */
ca_rt_err cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
                              unsigned *status)
{
    gpa_v2_fn gpa = REAL(gpa_v2_fn, I_cuGetProcAddress_v2);
    if (gpa == NULL)
        return CUABI_ERROR_NOT_INITIALIZED;
    ca_rt_err e = gpa(symbol, pfn, version, flags, status);
    if (e == 0)
        swap(symbol, pfn, version);
    return e;
}

/* The CUDA 11.3 form of the lookup. */
ca_rt_err cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
    gpa_v1_fn gpa = REAL(gpa_v1_fn, I_cuGetProcAddress);
    if (gpa == NULL)
        return CUABI_ERROR_NOT_INITIALIZED;
    ca_rt_err e = gpa(symbol, pfn, version, flags);
    if (e == 0)
        swap(symbol, pfn, version);
    return e;
}
