/* The HIP door: the exported hip* symbols, one line each into front.c, and the HIP runtime's
 * descriptor. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "address.h"
#include "capture.h"
#include "front.h"
#include "front_lane.h"
#include "hip_abi.h"
#include "host_front.h"
#include "init.h"

#define CA_DECLARE(name, params) CA_EXPORT ca_rt_err name params;
HIPABI_INTERPOSED(CA_DECLARE)

#define SYM(field, name, req) {offsetof(ca_rt_fns, field), name, req}
static const ca_rt_sym hip_syms[] = {
    SYM(malloc, "hipMalloc", 1),
    SYM(free, "hipFree", 1),
    SYM(malloc_async, "hipMallocAsync", 0), /* since HIP 5.1 */
    SYM(free_async, "hipFreeAsync", 0),
    SYM(ext_malloc_with_flags, "hipExtMallocWithFlags", 0),
    SYM(get_device, "hipGetDevice", 1),
    SYM(set_device, "hipSetDevice", 1),
    SYM(event_create_with_flags, "hipEventCreateWithFlags", 1),
    SYM(event_record, "hipEventRecord", 1),
    SYM(event_query, "hipEventQuery", 1),
    SYM(event_synchronize, "hipEventSynchronize", 1),
    SYM(event_destroy, "hipEventDestroy", 1),
    SYM(stream_wait_event, "hipStreamWaitEvent", 1),
    SYM(device_synchronize, "hipDeviceSynchronize", 1),
    SYM(mem_get_info, "hipMemGetInfo", 1),
    SYM(get_last_error, "hipGetLastError", 1),
    SYM(peek_last_error, "hipPeekAtLastError", 0),
    SYM(device_reset, "hipDeviceReset", 1),
    SYM(stream_create, "hipStreamCreate", 1),
    SYM(stream_create_with_flags, "hipStreamCreateWithFlags", 1),
    SYM(stream_create_with_priority, "hipStreamCreateWithPriority", 1),
    SYM(stream_destroy, "hipStreamDestroy", 1),
    SYM(stream_get_flags, "hipStreamGetFlags", 0),
    SYM(stream_query, "hipStreamQuery", 0),
    /* Expandable segments, where the runtime has virtual memory management (ROCm 5.2). */
    SYM(mem_address_reserve, "hipMemAddressReserve", 0),
    SYM(mem_address_free, "hipMemAddressFree", 0),
    SYM(mem_create, "hipMemCreate", 0),
    SYM(mem_release, "hipMemRelease", 0),
    SYM(mem_map, "hipMemMap", 0),
    SYM(mem_unmap, "hipMemUnmap", 0),
    SYM(mem_set_access, "hipMemSetAccess", 0),
    SYM(mem_get_granularity, "hipMemGetAllocationGranularity", 0),
    SYM(host_alloc, "hipHostMalloc", 0),
    SYM(host_free, "hipHostFree", 0),
    SYM(mem_get_address_range, "hipMemGetAddressRange", 0),
    SYM(mem_ptr_get_info, "hipMemPtrGetInfo", 0),
    SYM(mem_retain_handle, "hipMemRetainAllocationHandle", 0),
    SYM(mem_export_handle, "hipMemExportToShareableHandle", 0),
    SYM(mem_import_handle, "hipMemImportFromShareableHandle", 0),
    SYM(device_ordinal, "hipGetDevice", 0),
    SYM(device_attribute, "hipDeviceGetAttribute", 0),
    SYM(device_enable_peer, "hipDeviceEnablePeerAccess", 0),
    SYM(device_disable_peer, "hipDeviceDisablePeerAccess", 0),
    SYM(stream_is_capturing, "hipStreamIsCapturing", 0),
    SYM(stream_begin_capture, "hipStreamBeginCapture", 0),
    SYM(stream_end_capture, "hipStreamEndCapture", 0),
    {0, NULL, 0},
};

/* Pinned memory on device `ordinal`. */
static void hip_vmm_desc(int ordinal, ca_rt_vmm_desc *out)
{
    hipabi_mem_prop prop = {.type = HIPABI_MEM_ALLOCATION_TYPE_PINNED,
                            .location = {HIPABI_MEM_LOCATION_TYPE_DEVICE, ordinal}};
    _Static_assert(sizeof prop <= sizeof out->prop, "the property fits the descriptor");
    memcpy(out->prop, &prop, sizeof prop);
}

static ca_runtime hip_rt;

/* HIP has no context for a lane to compare: the current device's ordinal plus one names it. */
static ca_rt_err hip_current(void **token)
{
    int dev = -1;
    ca_rt_err e = hip_rt.fn.get_device(&dev);
    *token = (void *)(intptr_t)(dev + 1);
    return e;
}

static ca_runtime hip_rt = {
    .api = "hip",
    .door = "HIP at the runtime API",
    .real_what = "runtime",
    .tool_envs = (const char *const[]){"HSA_TOOLS_LIB", NULL}, /* rocprof, the ROCm tools */
    .syms = hip_syms,
    .codes = {
        .success = HIPABI_SUCCESS,
        .invalid_value = HIPABI_ERROR_INVALID_VALUE,
        .out_of_memory = HIPABI_ERROR_OUT_OF_MEMORY,
        .not_initialized = HIPABI_ERROR_NOT_INITIALIZED,
        .not_ready = HIPABI_ERROR_NOT_READY,
        .invalid_device_pointer = HIPABI_ERROR_INVALID_DEVICE_POINTER,
    },
    .legacy_stream = NULL, /* HIP's null stream is its legacy default stream */
    .per_thread_stream = (void *)HIPABI_STREAM_PER_THREAD_VALUE,
    .fn = {.current = hip_current}, /* the rest is resolved from hip_syms */
    .stream_nonblocking = HIPABI_STREAM_NON_BLOCKING,
    .event_flags = HIPABI_EVENT_DISABLE_TIMING,
    .vmm_desc = hip_vmm_desc,
    .index = CA_RT_HIP,
    /* hip_runtime_api.h: hipFree "performs an implicit hipDeviceSynchronize() call". */
    .reuse_default = CA_REUSE_SYNC,
    .pci_attrs = {67, 68, 69}, /* hipDeviceAttributePciBusId, PciDeviceId, PciDomainID */
    .init_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* Interposed hipMalloc: the runtime's own contract, served through front.c. */
ca_rt_err hipMalloc(void **ptr, size_t size) { return ca_front_malloc(&hip_rt, ptr, size); }
/* Interposed hipFree: the runtime's own contract, served through front.c. */
ca_rt_err hipFree(void *ptr) { return ca_front_free(&hip_rt, ptr); }
/* Interposed hipMallocAsync: the runtime's own contract, served through front.c. */
ca_rt_err hipMallocAsync(void **dev_ptr, size_t size, hipabi_stream_t stream) { return ca_front_malloc_async(&hip_rt, dev_ptr, size, stream, 0); }
/* Interposed hipFreeAsync: the runtime's own contract, served through front.c. */
ca_rt_err hipFreeAsync(void *dev_ptr, hipabi_stream_t stream) { return ca_front_free_async(&hip_rt, dev_ptr, stream, 0); }
/* Interposed hipExtMallocWithFlags: default flags are cached as hipMalloc is; fine-grained,
 * uncached and other special memory is not the cache's business. */
ca_rt_err hipExtMallocWithFlags(void **ptr, size_t size, unsigned int flags)
{
    ca_runtime *rt = &hip_rt;
    if (!ca_cache_ready(rt))
        return CA_PASSTHROUGH(rt, ext_malloc_with_flags, (ptr, size, flags));
    if (rt->fn.ext_malloc_with_flags == NULL)
        return rt->codes.not_initialized;
    if (flags != HIPABI_DEVICE_MALLOC_DEFAULT || ptr == NULL || size == 0)
        return rt->fn.ext_malloc_with_flags(ptr, size, flags);
    return ca_front_malloc(rt, ptr, size);
}
/* Interposed hipMemGetInfo: the runtime's own contract, served through front.c. */
ca_rt_err hipMemGetInfo(size_t *free, size_t *total) { return ca_front_mem_get_info(&hip_rt, free, total); }
/* Interposed hipDeviceReset: the runtime's own contract, served through front.c. */
ca_rt_err hipDeviceReset(void) { return ca_front_device_reset(&hip_rt); }
/* The runtime's peer access call (enable: flags too), then the cache's mapped memory of peer
 * follows (front.c). */
static ca_rt_err peer_access(int peer, unsigned flags, bool on)
{
    bool real = on ? hip_rt.fn.device_enable_peer != NULL : hip_rt.fn.device_disable_peer != NULL;
    if (!ca_cache_ready(&hip_rt) || !real)
        return on ? CA_PASSTHROUGH(&hip_rt, device_enable_peer, (peer, flags))
                  : CA_PASSTHROUGH(&hip_rt, device_disable_peer, (peer));
    ca_rt_err e =
        on ? hip_rt.fn.device_enable_peer(peer, flags) : hip_rt.fn.device_disable_peer(peer);
    if (e == hip_rt.codes.success)
        ca_front_peer_access(&hip_rt, peer, on);
    return e;
}
/* Interposed hipDeviceEnablePeerAccess: the runtime's, and the cache's mapped memory follows. */
ca_rt_err hipDeviceEnablePeerAccess(int peerDeviceId, unsigned int flags) { return peer_access(peerDeviceId, flags, true); }
/* Interposed hipDeviceDisablePeerAccess: the runtime's, and the cache's mapped memory follows. */
ca_rt_err hipDeviceDisablePeerAccess(int peerDeviceId) { return peer_access(peerDeviceId, 0, false); }
/* Interposed hipDeviceSynchronize: the runtime's own contract, served through front.c. */
ca_rt_err hipDeviceSynchronize(void) { return ca_front_device_synchronize(&hip_rt); }
/* Interposed hipStreamCreate: the runtime's own contract, served through front.c. */
ca_rt_err hipStreamCreate(hipabi_stream_t *stream) { return ca_front_stream_create(&hip_rt, CA_CTOR_PLAIN, (void **)stream, 0, 0); }
/* Interposed hipStreamCreateWithFlags: the runtime's own contract, served through front.c. */
ca_rt_err hipStreamCreateWithFlags(hipabi_stream_t *stream, unsigned int flags) { return ca_front_stream_create(&hip_rt, CA_CTOR_FLAGS, (void **)stream, flags, 0); }
/* Interposed hipStreamCreateWithPriority: the runtime's own contract, served through front.c. */
ca_rt_err hipStreamCreateWithPriority(hipabi_stream_t *stream, unsigned int flags, int priority) { return ca_front_stream_create(&hip_rt, CA_CTOR_PRIORITY, (void **)stream, flags, priority); }
/* Interposed hipStreamDestroy: the runtime's own contract, served through front.c. */
ca_rt_err hipStreamDestroy(hipabi_stream_t stream) { return ca_front_stream_destroy(&hip_rt, stream); }
/* Interposed hipStreamBeginCapture: the cache goes quiet for the capture (capture.c). */
ca_rt_err hipStreamBeginCapture(hipabi_stream_t stream, hipabi_capture_enum mode) { return ca_front_begin_capture(&hip_rt, stream, mode); }
/* Interposed hipStreamEndCapture: the cache calls the device again once no capture is left. */
ca_rt_err hipStreamEndCapture(hipabi_stream_t stream, hipabi_graph_t *graph) { return ca_front_end_capture(&hip_rt, stream, (void **)graph); }
/* Pinned host memory from the cache of pinned blocks (host_front.c); flags it does not keep
 * blocks of go to the runtime, for its own answer. */
static ca_rt_err host_alloc(void **ptr, size_t size, unsigned flags)
{
    if (flags & ~HIPABI_HOST_MALLOC_CACHED_FLAGS) {
        (void)ca_cache_ready(&hip_rt);
        return hip_rt.fn.host_alloc ? hip_rt.fn.host_alloc(ptr, size, flags)
                                    : hip_rt.codes.not_initialized;
    }
    return ca_front_host_alloc(&hip_rt, ptr, size, flags);
}
/* Interposed hipHostMalloc: pinned host memory, cached. */
ca_rt_err hipHostMalloc(void **ptr, size_t size, unsigned int flags) { return host_alloc(ptr, size, flags); }
/* Interposed hipMallocHost (deprecated): hipHostMalloc with no flags. */
ca_rt_err hipMallocHost(void **ptr, size_t size) { return host_alloc(ptr, size, 0); }
/* Interposed hipHostAlloc (deprecated): hipHostMalloc's. */
ca_rt_err hipHostAlloc(void **ptr, size_t size, unsigned int flags) { return host_alloc(ptr, size, flags); }
/* Interposed hipHostFree: the cache's blocks after the runtime's own wait; others the runtime's. */
ca_rt_err hipHostFree(void *ptr) { return ca_front_host_free(&hip_rt, ptr); }
/* Interposed hipFreeHost (deprecated): hipHostFree's. */
ca_rt_err hipFreeHost(void *ptr) { return ca_front_host_free(&hip_rt, ptr); }
/* Address queries: a block of the cache, device memory in a segment or a pinned block of its
 * size class, is answered as a fresh allocation of the size the program asked for is (its own
 * start, that size); everything else is the runtime's answer (address.h). A block of a plain
 * segment is answered so too, unlike the CUDA door's: ROCm's IPC handle carries the exported
 * pointer's offset in its allocation, so the block's own start exports as it is (docs/shim.md,
 * "Address queries"). True, with its start and size, for one of the cache's blocks. */
static bool served_range(void *p, uintptr_t *start, size_t *size)
{
    return ca_front_range(&hip_rt, p, start, size) != CA_RANGE_RUNTIME;
}

/* Interposed hipMemGetAddressRange: the runtime's answer, or a block's own range. */
ca_rt_err hipMemGetAddressRange(void **pbase, size_t *psize, void *dptr)
{
    (void)ca_cache_ready(&hip_rt);
    if (!hip_rt.fn.mem_get_address_range)
        return hip_rt.codes.not_initialized;
    ca_rt_err e = hip_rt.fn.mem_get_address_range(pbase, psize, dptr);
    uintptr_t start;
    size_t size;
    if (e == hip_rt.codes.success && served_range(dptr, &start, &size)) {
        if (pbase)
            *pbase = (void *)start;
        if (psize)
            *psize = size;
    }
    return e;
}

/* Interposed hipMemPtrGetInfo: the runtime's answer, or the size a block was asked with. */
ca_rt_err hipMemPtrGetInfo(void *ptr, size_t *size)
{
    (void)ca_cache_ready(&hip_rt);
    if (!hip_rt.fn.mem_ptr_get_info)
        return hip_rt.codes.not_initialized;
    ca_rt_err e = hip_rt.fn.mem_ptr_get_info(ptr, size);
    uintptr_t start;
    size_t asked;
    if (e == hip_rt.codes.success && size && served_range(ptr, &start, &asked))
        *size = asked;
    return e;
}
