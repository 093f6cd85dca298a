/* cuda_errors.c: last error and the error-name and error-string calls. */
#include "cuda_front.h"

cudaError_t cuda_ret(int rc)
{
    if (rc == SD_EBADFREE)
        rc = SD_EINVAL;
    if (rc != SD_OK && rc != SD_ENOTREADY)
        sd_record_error(rc);
    return rc;
}

static const struct {
    int code;
    const char *name, *text;
} errs[] = {
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

API const char *cudaGetErrorName(cudaError_t e)
{
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
        if (errs[i].code == e)
            return errs[i].name;
    return "cudaErrorUnknown";
}

API const char *cudaGetErrorString(cudaError_t e)
{
    for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++)
        if (errs[i].code == e)
            return errs[i].text;
    return "unrecognized error code";
}

API cudaError_t cudaGetLastError(void)
{
    return sd_last_error(1);
}

API cudaError_t cudaPeekAtLastError(void)
{
    return sd_last_error(0);
}
