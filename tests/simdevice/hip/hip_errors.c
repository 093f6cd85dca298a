/* hip_errors.c: last error and the error-name and error-string calls. */
#include "hip_front.h"

hipError_t hip_ret(int rc)
{
    /* HIP records every code its calls return as the thread's last error, "not ready" from an
     * event or stream query included (ROCm's HIP_RETURN): a query that finds work pending
     * shows up in the next hipGetLastError, which is what peers' caches trip over. */
    if (rc == SD_ENOTREADY)
        sd_record_error(rc);
    return sd_ret(rc, SD_EDEVPTR); /* what ROCm 5.2 documents for hipFree of a bad pointer */
}

static const struct sd_errname errs[] = {
    {0, "hipSuccess", "no error"},
    {1, "hipErrorInvalidValue", "invalid argument"},
    {2, "hipErrorOutOfMemory", "out of memory"},
    {3, "hipErrorNotInitialized", "initialization error"},
    {17, "hipErrorInvalidDevicePointer", "invalid device pointer"},
    {21, "hipErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {100, "hipErrorNoDevice", "no ROCm-capable device is detected"},
    {101, "hipErrorInvalidDevice", "invalid device ordinal"},
    {201, "hipErrorInvalidContext", "invalid device context"},
    {205, "hipErrorMapFailed", "mapping of buffer object failed"},
    {400, "hipErrorInvalidHandle", "invalid resource handle"},
    {600, "hipErrorNotReady", "device not ready"},
    {700, "hipErrorIllegalAddress", "an illegal memory access was encountered"},
    {401, "hipErrorIllegalState", "the operation cannot be performed in the present state"},
    {801, "hipErrorNotSupported", "operation not supported"},
    {900, "hipErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
    {901, "hipErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {902, "hipErrorStreamCaptureMerge",
     "operation would result in a merge of separate capture sequences"},
    {903, "hipErrorStreamCaptureUnmatched", "capture was not ended in the same stream as it began"},
    {904, "hipErrorStreamCaptureUnjoined", "capturing stream has unjoined work"},
    {905, "hipErrorStreamCaptureIsolation",
     "dependency created on uncaptured work in another stream"},
    {906, "hipErrorStreamCaptureImplicit",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {907, "hipErrorCapturedEvent",
     "operation not permitted on an event last recorded in a capturing stream"},
    {908, "hipErrorStreamCaptureWrongThread",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {999, "hipErrorUnknown", "unknown error"},
};
#define NERRS (sizeof errs / sizeof errs[0])

/* The error's enumerator name. */
API const char *hipGetErrorName(hipError_t e)
{
    const struct sd_errname *r = sd_err_find(errs, NERRS, e);
    return r ? r->name : "hipErrorUnknown";
}

/* The error's description. */
API const char *hipGetErrorString(hipError_t e)
{
    const struct sd_errname *r = sd_err_find(errs, NERRS, e);
    return r ? r->text : "unknown error";
}

/* Returns and clears the thread's last error (a sticky fault stays). */
API hipError_t hipGetLastError(void) { return sd_last_error(1); }
/* Returns the thread's last error without clearing it. */
API hipError_t hipPeekAtLastError(void) { return sd_last_error(0); }
