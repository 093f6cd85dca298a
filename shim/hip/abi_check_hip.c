/* Build-time proof that hip_abi.h matches the HIP headers: every constant, size and prototype
 * the shim relies on. Compiled only where the HIP headers are present; a mismatch fails the
 * build. main() checks the pointer-valued constant, which C cannot assert statically. */
#include <hip/hip_runtime_api.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hip_abi.h"

#define CA_SAME_PROTO(name, params)                                                           \
    _Static_assert(__builtin_types_compatible_p(__typeof__(name), ca_rt_err params),          \
                   #name " differs from the HIP header's prototype");

/* The deprecated names (hipMallocHost, hipHostAlloc, hipFreeHost) are interposed too, since
 * programs still call them: their prototypes are checked like the others'. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
HIPABI_INTERPOSED(CA_SAME_PROTO)
#pragma GCC diagnostic pop
HIPABI_CALLED(CA_SAME_PROTO)
HIPABI_VMM(CA_SAME_PROTO)

/* The virtual memory structures the shim fills, field by field. */
_Static_assert(__builtin_types_compatible_p(hipMemGenericAllocationHandle_t, hipabi_mem_handle_t),
               "hipMemGenericAllocationHandle_t");
_Static_assert(sizeof(hipMemAllocationProp) == sizeof(hipabi_mem_prop), "hipMemAllocationProp");
_Static_assert(HIPABI_HOST_MALLOC_CACHED_FLAGS ==
                   (hipHostMallocPortable | hipHostMallocMapped | hipHostMallocWriteCombined |
                    hipHostMallocNumaUser | hipHostMallocCoherent | hipHostMallocNonCoherent),
               "the flags of pinned blocks the cache keeps");
_Static_assert(hipMemHandleTypePosixFileDescriptor == CA_RT_HANDLE_POSIX_FD,
               "the file-descriptor handle type");
_Static_assert(offsetof(hipMemAllocationProp, compressionType) ==
               offsetof(hipabi_mem_prop, compression_type), "prop.compressionType");
_Static_assert(offsetof(hipMemAllocationProp, location) == offsetof(hipabi_mem_prop, location),
               "prop.location");
_Static_assert(offsetof(hipMemAllocationProp, requestedHandleType) ==
               offsetof(hipabi_mem_prop, requested_handle_type), "prop.requestedHandleType");
_Static_assert(offsetof(hipMemAllocationProp, type) == offsetof(hipabi_mem_prop, type),
               "prop.type");
_Static_assert(offsetof(hipMemAllocationProp, usage) == offsetof(hipabi_mem_prop, usage),
               "prop.usage");
_Static_assert(offsetof(hipMemAllocationProp, win32HandleMetaData) ==
               offsetof(hipabi_mem_prop, win32_handle_meta_data), "prop.win32HandleMetaData");
_Static_assert(sizeof(hipMemLocation) == sizeof(hipabi_mem_location), "hipMemLocation");
_Static_assert(offsetof(hipMemLocation, id) == offsetof(hipabi_mem_location, id), "location.id");
_Static_assert(hipMemAllocationTypePinned == HIPABI_MEM_ALLOCATION_TYPE_PINNED, "pinned");
_Static_assert(hipMemLocationTypeDevice == HIPABI_MEM_LOCATION_TYPE_DEVICE, "device location");
/* The access descriptor both doors share (runtime.h). */
_Static_assert(sizeof(hipMemAccessDesc) == sizeof(ca_rt_access_desc), "ca_rt_access_desc size");
_Static_assert(offsetof(hipMemAccessDesc, location.id) == offsetof(ca_rt_access_desc, location.id),
               "ca_rt_access_desc location.id");
_Static_assert(offsetof(hipMemAccessDesc, flags) == offsetof(ca_rt_access_desc, flags),
               "ca_rt_access_desc flags");
_Static_assert(hipMemLocationTypeDevice == CA_RT_LOCATION_DEVICE &&
                   hipMemAccessFlagsProtNone == CA_RT_ACCESS_NONE &&
                   hipMemAccessFlagsProtReadWrite == CA_RT_ACCESS_READWRITE,
               "ca_rt_access_desc constants");
_Static_assert(hipMemAllocationGranularityMinimum == 0, "granularity option minimum");

_Static_assert(__builtin_types_compatible_p(hipError_t, ca_rt_err), "hipError_t is not unsigned int");
_Static_assert(sizeof(hipError_t) == sizeof(ca_rt_err), "hipError_t size");
_Static_assert(__builtin_types_compatible_p(hipStream_t, hipabi_stream_t), "hipStream_t");
_Static_assert(__builtin_types_compatible_p(hipEvent_t, hipabi_event_t), "hipEvent_t");
_Static_assert(__builtin_types_compatible_p(hipGraph_t, hipabi_graph_t), "hipGraph_t");
_Static_assert(__builtin_types_compatible_p(hipStreamCaptureMode, hipabi_capture_enum),
               "hipStreamCaptureMode is not unsigned int");
_Static_assert(hipStreamCaptureStatusNone == 0, "the shim takes status 0 as not capturing");
_Static_assert(hipSuccess == HIPABI_SUCCESS, "hipSuccess");
_Static_assert(hipErrorInvalidValue == HIPABI_ERROR_INVALID_VALUE, "hipErrorInvalidValue");
_Static_assert(hipErrorOutOfMemory == HIPABI_ERROR_OUT_OF_MEMORY, "hipErrorOutOfMemory");
_Static_assert(hipErrorNotInitialized == HIPABI_ERROR_NOT_INITIALIZED, "hipErrorNotInitialized");
_Static_assert(hipErrorInvalidDevicePointer == HIPABI_ERROR_INVALID_DEVICE_POINTER, "hipErrorInvalidDevicePointer");
_Static_assert(hipErrorNotReady == HIPABI_ERROR_NOT_READY, "hipErrorNotReady");
_Static_assert(hipStreamNonBlocking == HIPABI_STREAM_NON_BLOCKING, "hipStreamNonBlocking");
_Static_assert(hipEventDisableTiming == HIPABI_EVENT_DISABLE_TIMING, "hipEventDisableTiming");
_Static_assert(hipDeviceMallocDefault == HIPABI_DEVICE_MALLOC_DEFAULT, "hipDeviceMallocDefault");

int main(void)
{
    if ((uintptr_t)hipStreamPerThread != HIPABI_STREAM_PER_THREAD_VALUE) {
        fprintf(stderr, "hipStreamPerThread is %p, the shim assumes %#x\n",
                (void *)hipStreamPerThread, HIPABI_STREAM_PER_THREAD_VALUE);
        return 1;
    }
    return 0;
}
