/* The CUDA driver as the cache's runtime descriptor: the same calling conventions as a runtime
 * (a CUdeviceptr is passed as a pointer is), context slots (ctx.c) in place of devices,
 * and the real functions behind the door's entry points (served.c). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ctx.h"
#include "descriptor.h"
#include "driver.h"
#include "real.h"
#include "served.h"

static ca_rt_err drv_get_last_error(void)
{
    return 0; /* the driver keeps no last error */
}

static int drv_resolve(ca_runtime *rt);

typedef ca_rt_err (*attribute_fn)(int *value, int attribute, int dev);

/* Whether device `ordinal` can export mapped memory as a file descriptor, asked once. */
static bool exports_fds(int ordinal)
{
    static _Atomic signed char known[64]; /* 0 not asked yet, 1 yes, -1 no */
    if (ordinal < 0 || ordinal >= 64)
        return false;
    signed char k = atomic_load_explicit(&known[ordinal], memory_order_relaxed);
    if (k == 0) {
        void *p = ca_drv_lookup("cuDeviceGetAttribute", 2000, CUABI_GPA_LEGACY,
                                "cuDeviceGetAttribute");
        attribute_fn get;
        memcpy(&get, &p, sizeof get);
        int v = 0;
        k = get && get(&v, CUABI_DEVICE_ATTRIBUTE_POSIX_FD_SUPPORTED, ordinal) == CUABI_SUCCESS &&
                    v == 1
                ? 1
                : -1;
        atomic_store_explicit(&known[ordinal], k, memory_order_relaxed);
    }
    return k > 0;
}

/* Pinned memory on device `ordinal`, exportable by a file descriptor where the device allows
 * it: what another process needs to open the cache's mapped memory (ipc/mapped.c). Asking
 * costs nothing measurable at creation (docs/gpu.md, finding 11). */
static void drv_vmm_desc(int ordinal, ca_rt_vmm_desc *out)
{
    cuabi_mem_prop prop = {.type = CUABI_MEM_ALLOCATION_TYPE_PINNED,
                           .requested_handle_types =
                               exports_fds(ordinal) ? CA_RT_HANDLE_POSIX_FD : 0,
                           .location = {CUABI_MEM_LOCATION_TYPE_DEVICE, ordinal}};
    _Static_assert(sizeof prop <= sizeof out->prop, "the property fits the descriptor");
    memcpy(out->prop, &prop, sizeof prop);
}

ca_runtime ca_drv_rt = {
    .api = "cuda",
    .door = "CUDA at the driver API",
    .real_what = "driver",
    .found_how = ca_drv_found_how,
    /* Nsight Systems and Compute inject through the first; compute-sanitizer (CUDA 13) preloads
     * its libraries and sets the second, not the first (seen on an H100, docs/gpu.md). */
    .tool_envs = (const char *const[]){"CUDA_INJECTION64_PATH",
                                       "NV_SANITIZER_INJECTION_PORT_BASE", NULL},
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
    .expandable_default = 1,
    .reuse_default = CA_REUSE_SAFE,
    .host_owner = ca_drv_host_owner,
    .host_wait = ca_drv_host_wait,
    .index = CA_RT_CUDA,
    .pci_attrs = {33, 34, 50}, /* CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, _DEVICE_ID, _DOMAIN_ID */
    .init_lock = PTHREAD_MUTEX_INITIALIZER,
};

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
    if (ca_drv_served_real(I_cuMemAlloc_v2) == NULL)
        return CA_REAL_ABSENT;
    /* Without the context functions the cache cannot work: calls pass through. */
    int missing = ca_drv_fns_get() == NULL;
    PUT(malloc, ca_drv_fn_ptr(ca_drv_served_real(I_cuMemAlloc_v2)));
    PUT(free, ca_drv_fn_ptr(ca_drv_served_real(I_cuMemFree_v2)));
    OPT(malloc_async, ca_drv_fn_ptr(ca_drv_served_real(I_cuMemAllocAsync)));
    OPT(free_async, ca_drv_fn_ptr(ca_drv_served_real(I_cuMemFreeAsync)));
    OPT(malloc_async_ptsz, ca_drv_fn_ptr(ca_drv_served_real(I_cuMemAllocAsync_ptsz)));
    OPT(free_async_ptsz, ca_drv_fn_ptr(ca_drv_served_real(I_cuMemFreeAsync_ptsz)));
    PUT(mem_get_info, ca_drv_fn_ptr(ca_drv_served_real(I_cuMemGetInfo_v2)));
    PUT(device_synchronize, ca_drv_fn_ptr(ca_drv_served_real(I_cuCtxSynchronize)));
    PUT(stream_create_with_flags, ca_drv_fn_ptr(ca_drv_served_real(I_cuStreamCreate)));
    PUT(stream_create_with_priority, ca_drv_fn_ptr(ca_drv_served_real(I_cuStreamCreateWithPriority)));
    PUT(stream_destroy, ca_drv_fn_ptr(ca_drv_served_real(I_cuStreamDestroy_v2)));
    PUT(event_create_with_flags, LOOK("cuEventCreate", 2000, CUABI_GPA_LEGACY, "cuEventCreate"));
    PUT(event_record, LOOK("cuEventRecord", 2000, CUABI_GPA_LEGACY, "cuEventRecord"));
    PUT(event_query, LOOK("cuEventQuery", 2000, CUABI_GPA_LEGACY, "cuEventQuery"));
    PUT(event_synchronize, LOOK("cuEventSynchronize", 2000, CUABI_GPA_LEGACY, "cuEventSynchronize"));
    PUT(event_destroy, LOOK("cuEventDestroy", 4000, CUABI_GPA_LEGACY, "cuEventDestroy_v2"));
    PUT(stream_wait_event, LOOK("cuStreamWaitEvent", 3020, CUABI_GPA_LEGACY, "cuStreamWaitEvent"));
    OPT(stream_get_flags, LOOK("cuStreamGetFlags", 5050, CUABI_GPA_LEGACY, "cuStreamGetFlags"));
    OPT(stream_query, LOOK("cuStreamQuery", 2000, CUABI_GPA_LEGACY, "cuStreamQuery"));
    OPT(device_attribute, LOOK("cuDeviceGetAttribute", 2000, CUABI_GPA_LEGACY,
                               "cuDeviceGetAttribute"));
    /* The first form: under MIG it names the GPU, as dcgm-exporter's UUID label does (the
     * second names the MIG instance); the second where the first is gone. */
    OPT(device_uuid, LOOK("cuDeviceGetUuid", 9020, CUABI_GPA_LEGACY, "cuDeviceGetUuid"));
    if (!rt->fn.device_uuid)
        OPT(device_uuid, LOOK("cuDeviceGetUuid", 11040, CUABI_GPA_LEGACY, "cuDeviceGetUuid_v2"));
    /* Expandable segments: through the real lookup, never the shim's own entry points. */
    OPT(mem_address_reserve, VMM("cuMemAddressReserve"));
    OPT(mem_address_free, VMM("cuMemAddressFree"));
    OPT(mem_create, VMM("cuMemCreate"));
    OPT(mem_release, VMM("cuMemRelease"));
    OPT(mem_map, VMM("cuMemMap"));
    OPT(mem_unmap, VMM("cuMemUnmap"));
    OPT(mem_set_access, VMM("cuMemSetAccess"));
    OPT(mem_get_granularity, VMM("cuMemGetAllocationGranularity"));
    OPT(host_alloc, ca_drv_fn_ptr(ca_drv_served_real(I_cuMemHostAlloc)));
    OPT(host_free, ca_drv_fn_ptr(ca_drv_served_real(I_cuMemFreeHost)));
    OPT(mem_retain_handle, LOOK("cuMemRetainAllocationHandle", 11000, CUABI_GPA_LEGACY,
                                "cuMemRetainAllocationHandle"));
    OPT(mem_export_handle, VMM("cuMemExportToShareableHandle"));
    OPT(mem_import_handle, VMM("cuMemImportFromShareableHandle"));
    if (!missing)
        OPT(device_ordinal, ca_drv_fn_ptr((void (*)(void))ca_drv_fns_get()->ctx_get_device));
    OPT(stream_is_capturing, LOOK("cuStreamIsCapturing", 10000, CUABI_GPA_LEGACY, "cuStreamIsCapturing"));
    OPT(stream_is_capturing_ptsz, LOOK("cuStreamIsCapturing", 10000, CUABI_GPA_PER_THREAD,
                                       "cuStreamIsCapturing_ptsz"));
    if (!missing)
        OPT(current, ca_drv_fn_ptr((void (*)(void))ca_drv_fns_get()->ctx_get_current));
    rt->fn.get_device = ca_drv_get_slot;
    rt->fn.set_device = ca_drv_set_slot;
    rt->fn.get_last_error = drv_get_last_error;
    return missing ? CA_REAL_INCOMPLETE : CA_REAL_OK;
}

