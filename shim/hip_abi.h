/* The slice of the HIP runtime ABI (libamdhip64.so.5) the shim needs, declared without the HIP
 * headers. abi_check_hip.c holds every value and prototype here against the real headers when
 * they are present. */
#ifndef CACHEALLOC_SHIM_HIP_ABI_H
#define CACHEALLOC_SHIM_HIP_ABI_H

#include <stddef.h>

#include "runtime.h"

/* hipError_t values (hip_runtime_api.h). */
#define HIPABI_SUCCESS 0u
#define HIPABI_ERROR_INVALID_VALUE 1u
#define HIPABI_ERROR_OUT_OF_MEMORY 2u
#define HIPABI_ERROR_NOT_INITIALIZED 3u
#define HIPABI_ERROR_INVALID_DEVICE_POINTER 17u
#define HIPABI_ERROR_NOT_READY 600u

/* Same struct tags as the HIP headers. */
typedef struct ihipStream_t *hipabi_stream_t;
typedef struct ihipEvent_t *hipabi_event_t;
typedef struct ihipGraph *hipabi_graph_t;
/* hipStreamCaptureMode and hipStreamCaptureStatus: enums of non-negative values, compatible
 * with unsigned int (asserted by abi_check_hip.c). */
typedef unsigned int hipabi_capture_enum;

#define HIPABI_STREAM_PER_THREAD_VALUE 0x2
#define HIPABI_STREAM_NON_BLOCKING 0x01u
#define HIPABI_EVENT_DISABLE_TIMING 0x2u
#define HIPABI_DEVICE_MALLOC_DEFAULT 0x0u

/* Every symbol the shim exports for HIP programs: X(name, parameter list). All return
 * hipError_t. */
#define HIPABI_INTERPOSED(X)                                                                  \
    X(hipMalloc, (void **ptr, size_t size))                                                   \
    X(hipFree, (void *ptr))                                                                   \
    X(hipMallocAsync, (void **dev_ptr, size_t size, hipabi_stream_t stream))                  \
    X(hipFreeAsync, (void *dev_ptr, hipabi_stream_t stream))                                  \
    X(hipExtMallocWithFlags, (void **ptr, size_t sizeBytes, unsigned int flags))              \
    X(hipMemGetInfo, (size_t *free, size_t *total))                                           \
    X(hipDeviceReset, (void))                                                                 \
    X(hipDeviceSynchronize, (void))                                                           \
    X(hipStreamCreate, (hipabi_stream_t *stream))                                             \
    X(hipStreamCreateWithFlags, (hipabi_stream_t *stream, unsigned int flags))                \
    X(hipStreamCreateWithPriority, (hipabi_stream_t *stream, unsigned int flags, int priority)) \
    X(hipStreamDestroy, (hipabi_stream_t stream))                                             \
    X(hipStreamBeginCapture, (hipabi_stream_t stream, hipabi_capture_enum mode))              \
    X(hipStreamEndCapture, (hipabi_stream_t stream, hipabi_graph_t *pGraph))

/* Real functions the shim calls besides the interposed ones. */
#define HIPABI_CALLED(X)                                                                      \
    X(hipGetDevice, (int *deviceId))                                                          \
    X(hipSetDevice, (int deviceId))                                                           \
    X(hipEventCreateWithFlags, (hipabi_event_t *event, unsigned flags))                       \
    X(hipEventRecord, (hipabi_event_t event, hipabi_stream_t stream))                         \
    X(hipEventQuery, (hipabi_event_t event))                                                  \
    X(hipEventSynchronize, (hipabi_event_t event))                                            \
    X(hipEventDestroy, (hipabi_event_t event))                                                \
    X(hipStreamWaitEvent, (hipabi_stream_t stream, hipabi_event_t event, unsigned int flags)) \
    X(hipStreamGetFlags, (hipabi_stream_t stream, unsigned int *flags))                       \
    X(hipGetLastError, (void))                                                                \
    X(hipStreamIsCapturing, (hipabi_stream_t stream, hipabi_capture_enum *pCaptureStatus))

#endif
