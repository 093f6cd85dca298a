/* cuda_errors.c: last error and the error-name and error-string calls. */
#include "cuda_front.h"

cudaError_t cuda_ret(int rc)
{
    return sd_ret(rc, SD_EINVAL);
}

static const struct sd_errname errs[] = {
    {0, "cudaSuccess", "no error"},
    {1, "cudaErrorInvalidValue", "invalid argument"},
    {2, "cudaErrorMemoryAllocation", "out of memory"},
    {3, "cudaErrorInitializationError", "initialization error"},
    {17, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
    {21, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {100, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {101, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {400, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {600, "cudaErrorNotReady", "device not ready"},
    {700, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {801, "cudaErrorNotSupported", "operation not supported"},
    {999, "cudaErrorUnknown", "unknown error"},
};
#define NERRS (sizeof errs / sizeof errs[0])

/* The error's enumerator name. */
API const char *cudaGetErrorName(cudaError_t e)
{
    const struct sd_errname *r = sd_err_find(errs, NERRS, e);
    return r ? r->name : "cudaErrorUnknown";
}

/* The error's description. */
API const char *cudaGetErrorString(cudaError_t e)
{
    const struct sd_errname *r = sd_err_find(errs, NERRS, e);
    return r ? r->text : "unrecognized error code";
}

/* Returns and clears the thread's last error (a sticky fault stays). */
API cudaError_t cudaGetLastError(void) { return sd_last_error(1); }
/* Returns the thread's last error without clearing it. */
API cudaError_t cudaPeekAtLastError(void) { return sd_last_error(0); }
