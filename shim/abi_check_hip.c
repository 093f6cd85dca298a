/* Build-time proof that hip_abi.h matches the HIP headers: every constant, size and prototype
 * the shim relies on. Compiled only where the HIP headers are present; a mismatch fails the
 * build. main() checks the pointer-valued constant, which C cannot assert statically. */
#include <hip/hip_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

#include "hip_abi.h"

#define CA_SAME_PROTO(name, params)                                                           \
    _Static_assert(__builtin_types_compatible_p(__typeof__(name), ca_rt_err params),          \
                   #name " differs from the HIP header's prototype");

HIPABI_INTERPOSED(CA_SAME_PROTO)
HIPABI_CALLED(CA_SAME_PROTO)

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
