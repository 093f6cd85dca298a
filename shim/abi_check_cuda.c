/* Build-time proof that cuda_abi.h matches the CUDA toolkit's headers: every constant, size and
 * prototype the shim relies on. Compiled only where the toolkit is present; a mismatch fails the
 * build. Compiled twice: once plain, once with CUDA_API_PER_THREAD_DEFAULT_STREAM, where the
 * toolkit declares the _ptsz forms. The pointer-valued constants cannot be checked by a static
 * assertion in C, so main() checks them and the program runs as a test. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

#include "cuda_abi.h"

#define CA_SAME_PROTO(name, params)                                                           \
    _Static_assert(__builtin_types_compatible_p(__typeof__(name), ca_rt_err params),          \
                   #name " differs from the toolkit's prototype");

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
CUABI_INTERPOSED_PTSZ(CA_SAME_PROTO)
#else
CUABI_INTERPOSED(CA_SAME_PROTO)
CUABI_CALLED(CA_SAME_PROTO)
#endif

_Static_assert(__builtin_types_compatible_p(cudaError_t, ca_rt_err), "cudaError_t is not unsigned int");
_Static_assert(sizeof(cudaError_t) == sizeof(ca_rt_err), "cudaError_t size");
_Static_assert(__builtin_types_compatible_p(cudaStream_t, cuabi_stream_t), "cudaStream_t");
_Static_assert(__builtin_types_compatible_p(cudaEvent_t, cuabi_event_t), "cudaEvent_t");
_Static_assert(sizeof(cudaStream_t) == sizeof(void *), "cudaStream_t size");
_Static_assert(cudaSuccess == CUABI_SUCCESS, "cudaSuccess");
_Static_assert(cudaErrorInvalidValue == CUABI_ERROR_INVALID_VALUE, "cudaErrorInvalidValue");
_Static_assert(cudaErrorMemoryAllocation == CUABI_ERROR_MEMORY_ALLOCATION, "cudaErrorMemoryAllocation");
_Static_assert(cudaErrorInitializationError == CUABI_ERROR_INITIALIZATION, "cudaErrorInitializationError");
_Static_assert(cudaErrorInvalidDevicePointer == CUABI_ERROR_INVALID_DEVICE_POINTER, "cudaErrorInvalidDevicePointer");
_Static_assert(cudaErrorNotReady == CUABI_ERROR_NOT_READY, "cudaErrorNotReady");
_Static_assert(cudaStreamNonBlocking == CUABI_STREAM_NON_BLOCKING, "cudaStreamNonBlocking");
_Static_assert(cudaEventDisableTiming == CUABI_EVENT_DISABLE_TIMING, "cudaEventDisableTiming");

int main(void)
{
    int bad = 0;
    if ((uintptr_t)cudaStreamLegacy != CUABI_STREAM_LEGACY_VALUE) {
        fprintf(stderr, "cudaStreamLegacy is %p, the shim assumes %#x\n", (void *)cudaStreamLegacy,
                CUABI_STREAM_LEGACY_VALUE);
        bad = 1;
    }
    if ((uintptr_t)cudaStreamPerThread != CUABI_STREAM_PER_THREAD_VALUE) {
        fprintf(stderr, "cudaStreamPerThread is %p, the shim assumes %#x\n",
                (void *)cudaStreamPerThread, CUABI_STREAM_PER_THREAD_VALUE);
        bad = 1;
    }
    return bad;
}
