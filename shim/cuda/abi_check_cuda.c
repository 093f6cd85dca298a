/* Build-time proof that cuda_abi.h matches the CUDA toolkit's cuda.h: every constant and
 * prototype of the driver entry points the shim serves. Compiled only where the toolkit is
 * present; a mismatch fails the build. The toolkit's internal view declares every versioned
 * name as itself (no renaming macros); a _ptsz form has its legacy form's prototype. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_abi.h"

#define CA_SAME_PROTO(name, base, version, flags, proto, params)                              \
    _Static_assert(__builtin_types_compatible_p(__typeof__(proto), ca_rt_err params),         \
                   #name " differs from the toolkit's prototype");
CUABI_SERVED(CA_SAME_PROTO)

_Static_assert(__builtin_types_compatible_p(CUresult, ca_rt_err), "CUresult is not unsigned int");
_Static_assert(__builtin_types_compatible_p(CUdeviceptr, cuabi_deviceptr), "CUdeviceptr");
_Static_assert(__builtin_types_compatible_p(CUstream, cuabi_stream_t), "CUstream");
_Static_assert(__builtin_types_compatible_p(CUcontext, cuabi_context_t), "CUcontext");
_Static_assert(__builtin_types_compatible_p(CUgraph, cuabi_graph_t), "CUgraph");
_Static_assert(__builtin_types_compatible_p(CUstreamCaptureMode, cuabi_capture_enum),
               "CUstreamCaptureMode is not unsigned int");
_Static_assert(__builtin_types_compatible_p(CUstreamCaptureStatus, cuabi_capture_enum),
               "CUstreamCaptureStatus is not unsigned int");
_Static_assert(__builtin_types_compatible_p(CUpointer_attribute, cuabi_pointer_attribute),
               "CUpointer_attribute is not unsigned int");
_Static_assert(CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE ==
                       CUABI_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE &&
                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR == CUABI_POINTER_ATTRIBUTE_RANGE_START_ADDR &&
                   CU_POINTER_ATTRIBUTE_RANGE_SIZE == CUABI_POINTER_ATTRIBUTE_RANGE_SIZE,
               "the pointer attributes the cache answers");
_Static_assert(CU_STREAM_CAPTURE_STATUS_NONE == 0, "the shim takes status 0 as not capturing");
_Static_assert(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED == 901 &&
                   CUDA_ERROR_STREAM_CAPTURE_UNJOINED == 904,
               "the codes with which an end of capture ends it");
_Static_assert(CUDA_SUCCESS == CUABI_SUCCESS, "CUDA_SUCCESS");
_Static_assert(CUDA_ERROR_INVALID_VALUE == CUABI_ERROR_INVALID_VALUE, "INVALID_VALUE");
_Static_assert(CUDA_ERROR_OUT_OF_MEMORY == CUABI_ERROR_OUT_OF_MEMORY, "OUT_OF_MEMORY");
_Static_assert(CUDA_ERROR_NOT_INITIALIZED == CUABI_ERROR_NOT_INITIALIZED, "NOT_INITIALIZED");
_Static_assert(CUDA_ERROR_INVALID_CONTEXT == CUABI_ERROR_INVALID_CONTEXT, "INVALID_CONTEXT");
_Static_assert(CUDA_ERROR_NOT_FOUND == CUABI_ERROR_NOT_FOUND, "NOT_FOUND");
_Static_assert(CUDA_ERROR_NOT_READY == CUABI_ERROR_NOT_READY, "NOT_READY");
_Static_assert(__builtin_types_compatible_p(CUmemoryPool, cuabi_mempool_t), "CUmemoryPool");
_Static_assert(sizeof(CUmemAccessDesc) == sizeof(cuabi_access_desc), "CUmemAccessDesc size");
_Static_assert(offsetof(CUmemAccessDesc, location.id) == offsetof(cuabi_access_desc, location.id),
               "CUmemAccessDesc.location.id");
_Static_assert(offsetof(CUmemAccessDesc, flags) == offsetof(cuabi_access_desc, flags),
               "CUmemAccessDesc.flags");
_Static_assert(CU_MEM_LOCATION_TYPE_DEVICE == CUABI_MEM_LOCATION_TYPE_DEVICE, "location type");
_Static_assert(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED ==
                   CUABI_DEVICE_ATTRIBUTE_POSIX_FD_SUPPORTED,
               "the attribute of file-descriptor exports");
_Static_assert(CU_MEMHOSTALLOC_PORTABLE == CUABI_MEMHOSTALLOC_PORTABLE &&
                   CU_MEMHOSTALLOC_DEVICEMAP == CUABI_MEMHOSTALLOC_DEVICEMAP &&
                   CU_MEMHOSTALLOC_WRITECOMBINED == CUABI_MEMHOSTALLOC_WRITECOMBINED,
               "cuMemHostAlloc's flags");
_Static_assert(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR == CA_RT_HANDLE_POSIX_FD,
               "the file-descriptor handle type");
_Static_assert(sizeof(CUipcMemHandle) == CUABI_IPC_HANDLE_SIZE, "CUipcMemHandle size");
_Static_assert(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS == CUABI_IPC_LAZY_ENABLE_PEER_ACCESS,
               "the lazy peer access flag");
_Static_assert(CU_STREAM_NON_BLOCKING == CUABI_STREAM_NON_BLOCKING, "CU_STREAM_NON_BLOCKING");
_Static_assert(CU_EVENT_DISABLE_TIMING == CUABI_EVENT_DISABLE_TIMING, "CU_EVENT_DISABLE_TIMING");
_Static_assert(CU_GET_PROC_ADDRESS_LEGACY_STREAM == CUABI_GPA_LEGACY, "legacy lookup flag");
_Static_assert(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM == CUABI_GPA_PER_THREAD,
               "per-thread lookup flag");

/* The virtual memory structures, field by field, and the handle. */
_Static_assert(__builtin_types_compatible_p(CUmemGenericAllocationHandle, cuabi_mem_handle),
               "CUmemGenericAllocationHandle");
_Static_assert(sizeof(CUmemAllocationProp) == sizeof(cuabi_mem_prop), "CUmemAllocationProp size");
_Static_assert(offsetof(CUmemAllocationProp, type) == offsetof(cuabi_mem_prop, type), "prop.type");
_Static_assert(offsetof(CUmemAllocationProp, requestedHandleTypes) ==
               offsetof(cuabi_mem_prop, requested_handle_types), "prop.requestedHandleTypes");
_Static_assert(offsetof(CUmemAllocationProp, location) == offsetof(cuabi_mem_prop, location),
               "prop.location");
_Static_assert(offsetof(CUmemAllocationProp, win32HandleMetaData) ==
               offsetof(cuabi_mem_prop, win32_handle_meta_data), "prop.win32HandleMetaData");
_Static_assert(offsetof(CUmemAllocationProp, allocFlags) == offsetof(cuabi_mem_prop, alloc_flags),
               "prop.allocFlags");
_Static_assert(sizeof(CUmemLocation) == sizeof(cuabi_mem_location), "CUmemLocation size");
_Static_assert(offsetof(CUmemLocation, id) == offsetof(cuabi_mem_location, id), "location.id");
_Static_assert(sizeof(CUmemAccessDesc) == sizeof(cuabi_access_desc), "CUmemAccessDesc size");
_Static_assert(offsetof(CUmemAccessDesc, flags) == offsetof(cuabi_access_desc, flags),
               "desc.flags");
_Static_assert(CU_MEM_ALLOCATION_TYPE_PINNED == CUABI_MEM_ALLOCATION_TYPE_PINNED, "PINNED");
_Static_assert(CU_MEM_LOCATION_TYPE_DEVICE == CUABI_MEM_LOCATION_TYPE_DEVICE, "LOCATION_DEVICE");
/* The access descriptor both doors share (runtime.h). */
_Static_assert(sizeof(CUmemAccessDesc) == sizeof(ca_rt_access_desc), "ca_rt_access_desc size");
_Static_assert(offsetof(CUmemAccessDesc, location.id) == offsetof(ca_rt_access_desc, location.id),
               "ca_rt_access_desc location.id");
_Static_assert(offsetof(CUmemAccessDesc, flags) == offsetof(ca_rt_access_desc, flags),
               "ca_rt_access_desc flags");
_Static_assert(CU_MEM_LOCATION_TYPE_DEVICE == CA_RT_LOCATION_DEVICE &&
                   CU_MEM_ACCESS_FLAGS_PROT_NONE == CA_RT_ACCESS_NONE &&
                   CU_MEM_ACCESS_FLAGS_PROT_READWRITE == CA_RT_ACCESS_READWRITE,
               "ca_rt_access_desc constants");
_Static_assert(CU_MEM_ALLOC_GRANULARITY_MINIMUM == 0, "granularity option minimum");
/* Their entry points, in the shapes door.c stores them as (structures by pointer). */
#define CA_SAME_VMM(name, params)                                                             \
    _Static_assert(__builtin_types_compatible_p(__typeof__(name), ca_rt_err params),          \
                   #name " differs from the toolkit's prototype");
CA_SAME_VMM(cuMemAddressReserve, (cuabi_deviceptr *, size_t, size_t, cuabi_deviceptr,
                                  unsigned long long))
CA_SAME_VMM(cuMemAddressFree, (cuabi_deviceptr, size_t))
CA_SAME_VMM(cuMemCreate, (cuabi_mem_handle *, size_t, const CUmemAllocationProp *,
                          unsigned long long))
CA_SAME_VMM(cuMemRelease, (cuabi_mem_handle))
CA_SAME_VMM(cuMemMap, (cuabi_deviceptr, size_t, size_t, cuabi_mem_handle, unsigned long long))
CA_SAME_VMM(cuMemUnmap, (cuabi_deviceptr, size_t))
CA_SAME_VMM(cuMemSetAccess, (cuabi_deviceptr, size_t, const CUmemAccessDesc *, size_t))
CA_SAME_VMM(cuMemGetAllocationGranularity, (size_t *, const CUmemAllocationProp *,
                                            CUmemAllocationGranularity_flags))

int main(void)
{
    /* The pointer-valued stream constants are checked here, where they can be. */
    return (uintptr_t)CU_STREAM_LEGACY != CUABI_STREAM_LEGACY_VALUE ||
           (uintptr_t)CU_STREAM_PER_THREAD != CUABI_STREAM_PER_THREAD_VALUE;
}
