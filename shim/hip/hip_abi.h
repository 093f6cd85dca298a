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
/* hipHostMalloc's flags the cache keeps blocks of (each set apart): portable, mapped,
 * write-combined, NUMA user policy, coherent, non-coherent. Others go to the runtime. */
#define HIPABI_HOST_MALLOC_CACHED_FLAGS 0xE0000007u

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

/* Virtual memory management (ROCm 5.2 exports it under hip_5.1): what expandable segments call.
 * The header's structures are only named here; the shim fills its own copies of their layouts,
 * which abi_check_hip.c holds against the header field by field. */
typedef struct ihipMemGenericAllocationHandle *hipabi_mem_handle_t;
struct hipMemAllocationProp;
struct hipMemAccessDesc;
#define HIPABI_MEM_ALLOCATION_TYPE_PINNED 1
#define HIPABI_MEM_LOCATION_TYPE_DEVICE 1
typedef struct hipabi_mem_location {
    int type, id;
} hipabi_mem_location;
typedef struct hipabi_mem_prop {
    unsigned char compression_type;
    hipabi_mem_location location;
    int requested_handle_type;
    int type;
    unsigned short usage;
    void *win32_handle_meta_data;
} hipabi_mem_prop;

#define HIPABI_VMM(X)                                                                         \
    X(hipMemAddressReserve, (void **ptr, size_t size, size_t alignment, void *addr,           \
                             unsigned long long flags))                                       \
    X(hipMemAddressFree, (void *devPtr, size_t size))                                         \
    X(hipMemCreate, (hipabi_mem_handle_t * handle, size_t size,                               \
                     const struct hipMemAllocationProp *prop, unsigned long long flags))      \
    X(hipMemRelease, (hipabi_mem_handle_t handle))                                            \
    X(hipMemMap, (void *ptr, size_t size, size_t offset, hipabi_mem_handle_t handle,          \
                  unsigned long long flags))                                                  \
    X(hipMemUnmap, (void *ptr, size_t size))                                                  \
    X(hipMemSetAccess, (void *ptr, size_t size, const struct hipMemAccessDesc *desc,          \
                        size_t count))                                                        \
    X(hipMemGetAllocationGranularity, (size_t *granularity,                                   \
                                       const struct hipMemAllocationProp *prop,               \
                                       unsigned int option))

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
    X(hipDeviceEnablePeerAccess, (int peerDeviceId, unsigned int flags))                      \
    X(hipDeviceDisablePeerAccess, (int peerDeviceId))                                         \
    X(hipStreamCreate, (hipabi_stream_t *stream))                                             \
    X(hipStreamCreateWithFlags, (hipabi_stream_t *stream, unsigned int flags))                \
    X(hipStreamCreateWithPriority, (hipabi_stream_t *stream, unsigned int flags, int priority)) \
    X(hipStreamDestroy, (hipabi_stream_t stream))                                             \
    X(hipStreamBeginCapture, (hipabi_stream_t stream, hipabi_capture_enum mode))              \
    X(hipStreamEndCapture, (hipabi_stream_t stream, hipabi_graph_t *pGraph))                  \
    X(hipHostMalloc, (void **ptr, size_t size, unsigned int flags))                          \
    X(hipMallocHost, (void **ptr, size_t size))                                               \
    X(hipHostAlloc, (void **ptr, size_t size, unsigned int flags))                           \
    X(hipHostFree, (void *ptr))                                                               \
    X(hipFreeHost, (void *ptr))                                                               \
    X(hipMemGetAddressRange, (void **pbase, size_t *psize, void *dptr))                       \
    X(hipMemPtrGetInfo, (void *ptr, size_t *size))

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
