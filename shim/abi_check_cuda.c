/* Build-time proof that cuda_abi.h matches the CUDA toolkit's cuda.h: every constant and
 * prototype of the driver entry points the shim serves. Compiled only where the toolkit is
 * present; a mismatch fails the build. The toolkit's internal view declares every versioned
 * name as itself (no renaming macros); a _ptsz form has its legacy form's prototype. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
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
_Static_assert(CU_STREAM_NON_BLOCKING == CUABI_STREAM_NON_BLOCKING, "CU_STREAM_NON_BLOCKING");
_Static_assert(CU_EVENT_DISABLE_TIMING == CUABI_EVENT_DISABLE_TIMING, "CU_EVENT_DISABLE_TIMING");
_Static_assert(CU_GET_PROC_ADDRESS_LEGACY_STREAM == CUABI_GPA_LEGACY, "legacy lookup flag");
_Static_assert(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM == CUABI_GPA_PER_THREAD,
               "per-thread lookup flag");

int main(void)
{
    /* The pointer-valued stream constants are checked here, where they can be. */
    return (uintptr_t)CU_STREAM_LEGACY != CUABI_STREAM_LEGACY_VALUE ||
           (uintptr_t)CU_STREAM_PER_THREAD != CUABI_STREAM_PER_THREAD_VALUE;
}
