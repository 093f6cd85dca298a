/* The slice of the CUDA driver ABI (libcuda.so.1) the shim needs, declared without the
 * toolkit so that the shim builds without it. abi_check_cuda.c holds every value and prototype
 * here against the toolkit's cuda.h when it is present. */
#ifndef CACHEALLOC_SHIM_CUDA_ABI_H
#define CACHEALLOC_SHIM_CUDA_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

/* CUresult values. */
#define CUABI_SUCCESS 0u
#define CUABI_ERROR_INVALID_VALUE 1u
#define CUABI_ERROR_OUT_OF_MEMORY 2u
#define CUABI_ERROR_NOT_INITIALIZED 3u
#define CUABI_ERROR_INVALID_CONTEXT 201u
#define CUABI_ERROR_NOT_FOUND 500u
#define CUABI_ERROR_NOT_READY 600u

/* Same struct tags as the toolkit, so the types are the toolkit's own. */
typedef unsigned long long cuabi_deviceptr;
typedef struct CUstream_st *cuabi_stream_t;
typedef struct CUctx_st *cuabi_context_t;
typedef struct CUmemPoolHandle_st *cuabi_mempool_t;
struct CUmemAccessDesc_st;
/* CUipcMemHandle, passed by value to cuIpcOpenMemHandle; cuda.h defines the same struct where
 * abi_check_cuda.c includes both. */
#define CUABI_IPC_HANDLE_SIZE 64
#define CUABI_IPC_LAZY_ENABLE_PEER_ACCESS 0x1u
#ifndef CUDA_VERSION
struct CUipcMemHandle_st {
    char reserved[CUABI_IPC_HANDLE_SIZE];
};
#endif
typedef struct CUgraph_st *cuabi_graph_t;
/* CUstreamCaptureMode and CUstreamCaptureStatus: enums of non-negative values, compatible with
 * unsigned int under gcc and clang (asserted by abi_check_cuda.c). */
typedef unsigned int cuabi_capture_enum;
/* CUpointer_attribute, likewise. */
typedef unsigned int cuabi_pointer_attribute;
#define CUABI_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE 10u
#define CUABI_POINTER_ATTRIBUTE_RANGE_START_ADDR 11u
#define CUABI_POINTER_ATTRIBUTE_RANGE_SIZE 12u

#define CUABI_STREAM_LEGACY_VALUE 0x1
#define CUABI_STREAM_PER_THREAD_VALUE 0x2
#define CUABI_STREAM_NON_BLOCKING 0x1u
#define CUABI_EVENT_DISABLE_TIMING 0x2u
#define CUABI_GPA_LEGACY 1
#define CUABI_GPA_PER_THREAD 2

/* Virtual memory management (CUDA 10.2), what expandable segments call: looked up at this ABI
 * version. The two structures are CUmemAllocationProp and CUmemAccessDesc. */
#define CUABI_VMM_VERSION 10020
#define CUABI_MEM_ALLOCATION_TYPE_PINNED 1
#define CUABI_MEM_LOCATION_TYPE_DEVICE 1
#define CUABI_DEVICE_ATTRIBUTE_POSIX_FD_SUPPORTED 103
/* cuMemHostAlloc's flags. */
#define CUABI_MEMHOSTALLOC_PORTABLE 0x1u
#define CUABI_MEMHOSTALLOC_DEVICEMAP 0x2u
#define CUABI_MEMHOSTALLOC_WRITECOMBINED 0x4u
typedef unsigned long long cuabi_mem_handle;
typedef struct cuabi_mem_location {
    int type, id;
} cuabi_mem_location;
typedef struct cuabi_mem_prop {
    int type;
    int requested_handle_types;
    cuabi_mem_location location;
    void *win32_handle_meta_data;
    unsigned char alloc_flags[8];
} cuabi_mem_prop;
/* CUmemAccessDesc: what expandable segments give and what cuMemPoolSetAccess is given. */
typedef struct cuabi_access_desc {
    cuabi_mem_location location;
    int flags;
} cuabi_access_desc;

/* Every driver entry point the shim serves: X(exported name, base name, ABI version, lookup
 * flags, the toolkit's declaration it must match, parameter list). All return CUresult. */
#define CUABI_SERVED(X)                                                                       \
    X(cuMemAlloc_v2, "cuMemAlloc", 3020, CUABI_GPA_LEGACY, cuMemAlloc_v2,                    \
      (cuabi_deviceptr * dptr, size_t bytesize))                                              \
    X(cuMemFree_v2, "cuMemFree", 3020, CUABI_GPA_LEGACY, cuMemFree_v2, (cuabi_deviceptr dptr)) \
    X(cuMemAllocAsync, "cuMemAllocAsync", 11020, CUABI_GPA_LEGACY, cuMemAllocAsync,           \
      (cuabi_deviceptr * dptr, size_t bytesize, cuabi_stream_t hStream))                      \
    X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", 11020, CUABI_GPA_PER_THREAD, cuMemAllocAsync,  \
      (cuabi_deviceptr * dptr, size_t bytesize, cuabi_stream_t hStream))                      \
    X(cuMemFreeAsync, "cuMemFreeAsync", 11020, CUABI_GPA_LEGACY, cuMemFreeAsync,              \
      (cuabi_deviceptr dptr, cuabi_stream_t hStream))                                         \
    X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", 11020, CUABI_GPA_PER_THREAD, cuMemFreeAsync,     \
      (cuabi_deviceptr dptr, cuabi_stream_t hStream))                                         \
    X(cuMemAllocPitch_v2, "cuMemAllocPitch", 3020, CUABI_GPA_LEGACY, cuMemAllocPitch_v2,      \
      (cuabi_deviceptr * dptr, size_t * pPitch, size_t WidthInBytes, size_t Height,           \
       unsigned int ElementSizeBytes))                                                        \
    X(cuMemHostAlloc, "cuMemHostAlloc", 2020, CUABI_GPA_LEGACY, cuMemHostAlloc,               \
      (void **pp, size_t bytesize, unsigned int Flags))                                       \
    X(cuMemAllocHost_v2, "cuMemAllocHost", 3020, CUABI_GPA_LEGACY, cuMemAllocHost_v2,         \
      (void **pp, size_t bytesize))                                                           \
    X(cuMemFreeHost, "cuMemFreeHost", 2000, CUABI_GPA_LEGACY, cuMemFreeHost, (void *p))       \
    X(cuMemGetInfo_v2, "cuMemGetInfo", 3020, CUABI_GPA_LEGACY, cuMemGetInfo_v2,               \
      (size_t * free, size_t * total))                                                        \
    X(cuStreamCreate, "cuStreamCreate", 2000, CUABI_GPA_LEGACY, cuStreamCreate,               \
      (cuabi_stream_t * phStream, unsigned int Flags))                                        \
    X(cuStreamCreateWithPriority, "cuStreamCreateWithPriority", 5050, CUABI_GPA_LEGACY,       \
      cuStreamCreateWithPriority, (cuabi_stream_t * phStream, unsigned int flags, int priority)) \
    X(cuStreamDestroy_v2, "cuStreamDestroy", 4000, CUABI_GPA_LEGACY, cuStreamDestroy_v2,      \
      (cuabi_stream_t hStream))                                                               \
    X(cuCtxSynchronize, "cuCtxSynchronize", 2000, CUABI_GPA_LEGACY, cuCtxSynchronize, (void)) \
    X(cuCtxSynchronize_v2, "cuCtxSynchronize", 13000, CUABI_GPA_LEGACY, cuCtxSynchronize_v2,  \
      (cuabi_context_t ctx))                                                                  \
    X(cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset", 7000, CUABI_GPA_LEGACY,             \
      cuDevicePrimaryCtxReset, (int dev))                                                     \
    X(cuDevicePrimaryCtxReset_v2, "cuDevicePrimaryCtxReset", 11000, CUABI_GPA_LEGACY,         \
      cuDevicePrimaryCtxReset_v2, (int dev))                                                  \
    X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", 7000, CUABI_GPA_LEGACY,         \
      cuDevicePrimaryCtxRelease, (int dev))                                                   \
    X(cuDevicePrimaryCtxRelease_v2, "cuDevicePrimaryCtxRelease", 11000, CUABI_GPA_LEGACY,     \
      cuDevicePrimaryCtxRelease_v2, (int dev))                                                \
    X(cuCtxDestroy_v2, "cuCtxDestroy", 4000, CUABI_GPA_LEGACY, cuCtxDestroy_v2,               \
      (cuabi_context_t ctx))                                                                  \
    X(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess", 4000, CUABI_GPA_LEGACY,                 \
      cuCtxEnablePeerAccess, (cuabi_context_t peer, unsigned flags))                          \
    X(cuCtxDisablePeerAccess, "cuCtxDisablePeerAccess", 4000, CUABI_GPA_LEGACY,               \
      cuCtxDisablePeerAccess, (cuabi_context_t peer))                                         \
    X(cuDeviceSetMemPool, "cuDeviceSetMemPool", 11020, CUABI_GPA_LEGACY, cuDeviceSetMemPool,  \
      (int dev, cuabi_mempool_t pool))                                                        \
    X(cuMemPoolSetAccess, "cuMemPoolSetAccess", 11020, CUABI_GPA_LEGACY, cuMemPoolSetAccess,  \
      (cuabi_mempool_t pool, const struct CUmemAccessDesc_st *map, size_t count))             \
    X(cuMemPoolTrimTo, "cuMemPoolTrimTo", 11020, CUABI_GPA_LEGACY, cuMemPoolTrimTo,           \
      (cuabi_mempool_t pool, size_t minBytesToKeep))                                          \
    X(cuIpcGetMemHandle, "cuIpcGetMemHandle", 4010, CUABI_GPA_LEGACY, cuIpcGetMemHandle,     \
      (struct CUipcMemHandle_st * pHandle, cuabi_deviceptr dptr))                             \
    X(cuIpcOpenMemHandle, "cuIpcOpenMemHandle", 4010, CUABI_GPA_LEGACY, cuIpcOpenMemHandle,   \
      (cuabi_deviceptr * pdptr, struct CUipcMemHandle_st handle, unsigned int Flags))         \
    X(cuIpcOpenMemHandle_v2, "cuIpcOpenMemHandle", 11000, CUABI_GPA_LEGACY,                   \
      cuIpcOpenMemHandle, (cuabi_deviceptr * pdptr, struct CUipcMemHandle_st handle,          \
                           unsigned int Flags))                                               \
    X(cuIpcCloseMemHandle, "cuIpcCloseMemHandle", 4010, CUABI_GPA_LEGACY,                     \
      cuIpcCloseMemHandle, (cuabi_deviceptr dptr))                                            \
    X(cuMemGetAddressRange_v2, "cuMemGetAddressRange", 3020, CUABI_GPA_LEGACY,               \
      cuMemGetAddressRange_v2, (cuabi_deviceptr * pbase, size_t * psize, cuabi_deviceptr dptr)) \
    X(cuPointerGetAttribute, "cuPointerGetAttribute", 4000, CUABI_GPA_LEGACY,                 \
      cuPointerGetAttribute, (void *data, cuabi_pointer_attribute attribute,                  \
                              cuabi_deviceptr ptr))                                           \
    X(cuPointerGetAttributes, "cuPointerGetAttributes", 7000, CUABI_GPA_LEGACY,               \
      cuPointerGetAttributes, (unsigned int numAttributes, cuabi_pointer_attribute *attributes, \
                               void **data, cuabi_deviceptr ptr))                             \
    X(cuGetProcAddress, "cuGetProcAddress", 11030, CUABI_GPA_LEGACY, cuGetProcAddress,        \
      (const char *symbol, void **pfn, int cudaVersion, uint64_t flags))                      \
    X(cuGetProcAddress_v2, "cuGetProcAddress", 12000, CUABI_GPA_LEGACY, cuGetProcAddress_v2,  \
      (const char *symbol, void **pfn, int cudaVersion, uint64_t flags, unsigned *symbolStatus)) \
    X(cuStreamBeginCapture, "cuStreamBeginCapture", 10000, CUABI_GPA_LEGACY,                  \
      cuStreamBeginCapture, (cuabi_stream_t hStream))                                         \
    X(cuStreamBeginCapture_ptsz, "cuStreamBeginCapture", 10000, CUABI_GPA_PER_THREAD,         \
      cuStreamBeginCapture, (cuabi_stream_t hStream))                                         \
    X(cuStreamBeginCapture_v2, "cuStreamBeginCapture", 10010, CUABI_GPA_LEGACY,               \
      cuStreamBeginCapture_v2, (cuabi_stream_t hStream, cuabi_capture_enum mode))            \
    X(cuStreamBeginCapture_v2_ptsz, "cuStreamBeginCapture", 10010, CUABI_GPA_PER_THREAD,      \
      cuStreamBeginCapture_v2, (cuabi_stream_t hStream, cuabi_capture_enum mode))            \
    X(cuStreamEndCapture, "cuStreamEndCapture", 10000, CUABI_GPA_LEGACY, cuStreamEndCapture,  \
      (cuabi_stream_t hStream, cuabi_graph_t * phGraph))                                      \
    X(cuStreamEndCapture_ptsz, "cuStreamEndCapture", 10000, CUABI_GPA_PER_THREAD,             \
      cuStreamEndCapture, (cuabi_stream_t hStream, cuabi_graph_t * phGraph))                  \
    X(cuThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", 10010,          \
      CUABI_GPA_LEGACY, cuThreadExchangeStreamCaptureMode, (cuabi_capture_enum * mode))

#endif
