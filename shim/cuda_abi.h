/* The slice of the CUDA runtime ABI (libcudart.so.13) the shim needs, declared without the
 * toolkit so that the shim builds without it. abi_check_cuda.c holds every value and prototype
 * here against the real headers when they are present. */
#ifndef CACHEALLOC_SHIM_CUDA_ABI_H
#define CACHEALLOC_SHIM_CUDA_ABI_H

#include <stddef.h>

#include "runtime.h"

/* cudaError_t values (driver_types.h). */
#define CUABI_SUCCESS 0u
#define CUABI_ERROR_INVALID_VALUE 1u
#define CUABI_ERROR_MEMORY_ALLOCATION 2u
#define CUABI_ERROR_INITIALIZATION 3u
#define CUABI_ERROR_INVALID_DEVICE_POINTER 17u
#define CUABI_ERROR_NOT_READY 600u

/* Same struct tags as the toolkit, so the types are the toolkit's own. */
typedef struct CUstream_st *cuabi_stream_t;
typedef struct CUevent_st *cuabi_event_t;

#define CUABI_STREAM_LEGACY_VALUE 0x1
#define CUABI_STREAM_PER_THREAD_VALUE 0x2
#define CUABI_STREAM_NON_BLOCKING 0x01u
#define CUABI_EVENT_DISABLE_TIMING 0x02u

/* Every symbol the shim exports for CUDA programs: X(name, parameter list). All return
 * cudaError_t. */
#define CUABI_INTERPOSED(X)                                                                   \
    X(cudaMalloc, (void **devPtr, size_t size))                                               \
    X(cudaFree, (void *devPtr))                                                               \
    X(cudaMallocAsync, (void **devPtr, size_t size, cuabi_stream_t hStream))                  \
    X(cudaFreeAsync, (void *devPtr, cuabi_stream_t hStream))                                  \
    X(cudaMemGetInfo, (size_t *free, size_t *total))                                          \
    X(cudaDeviceReset, (void))                                                                \
    X(cudaDeviceSynchronize, (void))                                                          \
    X(cudaStreamCreate, (cuabi_stream_t *pStream))                                            \
    X(cudaStreamCreateWithFlags, (cuabi_stream_t *pStream, unsigned int flags))               \
    X(cudaStreamCreateWithPriority, (cuabi_stream_t *pStream, unsigned int flags, int priority)) \
    X(cudaStreamDestroy, (cuabi_stream_t stream))

/* The per-thread-default-stream forms (the toolkit declares them only under
 * CUDA_API_PER_THREAD_DEFAULT_STREAM, where they replace the names above). */
#define CUABI_INTERPOSED_PTSZ(X)                                                              \
    X(cudaMallocAsync_ptsz, (void **devPtr, size_t size, cuabi_stream_t hStream))             \
    X(cudaFreeAsync_ptsz, (void *devPtr, cuabi_stream_t hStream))

/* Real functions the shim calls besides the interposed ones. */
#define CUABI_CALLED(X)                                                                       \
    X(cudaGetDevice, (int *device))                                                           \
    X(cudaSetDevice, (int device))                                                            \
    X(cudaEventCreateWithFlags, (cuabi_event_t *event, unsigned int flags))                   \
    X(cudaEventRecord, (cuabi_event_t event, cuabi_stream_t stream))                          \
    X(cudaEventQuery, (cuabi_event_t event))                                                  \
    X(cudaEventSynchronize, (cuabi_event_t event))                                            \
    X(cudaEventDestroy, (cuabi_event_t event))                                                \
    X(cudaStreamWaitEvent, (cuabi_stream_t stream, cuabi_event_t event, unsigned int flags))  \
    X(cudaStreamGetFlags, (cuabi_stream_t hStream, unsigned int *flags))                      \
    X(cudaGetLastError, (void))

#endif
