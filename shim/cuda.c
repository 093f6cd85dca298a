/* The CUDA door: the exported cuda* symbols, one line each into front.c, and the CUDA
 * runtime's descriptor. */
#include <stddef.h>

#include "cuda_abi.h"
#include "front.h"

#define CA_DECLARE(name, params) CA_EXPORT ca_rt_err name params;
CUABI_INTERPOSED(CA_DECLARE)
CUABI_INTERPOSED_PTSZ(CA_DECLARE)

#define SYM(field, name, req) {offsetof(ca_rt_fns, field), name, req}
static const ca_rt_sym cuda_syms[] = {
    SYM(malloc, "cudaMalloc", 1),
    SYM(free, "cudaFree", 1),
    SYM(malloc_async, "cudaMallocAsync", 0),
    SYM(free_async, "cudaFreeAsync", 0),
    SYM(malloc_async_ptsz, "cudaMallocAsync_ptsz", 0),
    SYM(free_async_ptsz, "cudaFreeAsync_ptsz", 0),
    SYM(get_device, "cudaGetDevice", 1),
    SYM(set_device, "cudaSetDevice", 1),
    SYM(event_create_with_flags, "cudaEventCreateWithFlags", 1),
    SYM(event_record, "cudaEventRecord", 1),
    SYM(event_query, "cudaEventQuery", 1),
    SYM(event_synchronize, "cudaEventSynchronize", 1),
    SYM(event_destroy, "cudaEventDestroy", 1),
    SYM(stream_wait_event, "cudaStreamWaitEvent", 1),
    SYM(device_synchronize, "cudaDeviceSynchronize", 1),
    SYM(mem_get_info, "cudaMemGetInfo", 1),
    SYM(get_last_error, "cudaGetLastError", 1),
    SYM(device_reset, "cudaDeviceReset", 1),
    SYM(stream_create, "cudaStreamCreate", 1),
    SYM(stream_create_with_flags, "cudaStreamCreateWithFlags", 1),
    SYM(stream_create_with_priority, "cudaStreamCreateWithPriority", 1),
    SYM(stream_destroy, "cudaStreamDestroy", 1),
    SYM(stream_get_flags, "cudaStreamGetFlags", 0),
    {0, NULL, 0},
};

static ca_runtime cuda_rt = {
    .api = "cuda",
    .syms = cuda_syms,
    .codes = {
        .success = CUABI_SUCCESS,
        .invalid_value = CUABI_ERROR_INVALID_VALUE,
        .out_of_memory = CUABI_ERROR_MEMORY_ALLOCATION,
        .not_initialized = CUABI_ERROR_INITIALIZATION,
        .not_ready = CUABI_ERROR_NOT_READY,
        .invalid_device_pointer = CUABI_ERROR_INVALID_DEVICE_POINTER,
    },
    /* Explicit handles: correct even where the program's stream 0 means per-thread. */
    .legacy_stream = (void *)CUABI_STREAM_LEGACY_VALUE,
    .per_thread_stream = (void *)CUABI_STREAM_PER_THREAD_VALUE,
    .stream_nonblocking = CUABI_STREAM_NON_BLOCKING,
    .event_flags = CUABI_EVENT_DISABLE_TIMING,
    .slot = 0,
    .init_lock = PTHREAD_MUTEX_INITIALIZER,
};

/* Interposed cudaMalloc: the runtime's own contract, served through front.c. */
ca_rt_err cudaMalloc(void **devPtr, size_t size) { return ca_front_malloc(&cuda_rt, devPtr, size); }
/* Interposed cudaFree: the runtime's own contract, served through front.c. */
ca_rt_err cudaFree(void *devPtr) { return ca_front_free(&cuda_rt, devPtr); }
/* Interposed cudaMallocAsync: the runtime's own contract, served through front.c. */
ca_rt_err cudaMallocAsync(void **devPtr, size_t size, cuabi_stream_t hStream) { return ca_front_malloc_async(&cuda_rt, devPtr, size, hStream, 0); }
/* Interposed cudaFreeAsync: the runtime's own contract, served through front.c. */
ca_rt_err cudaFreeAsync(void *devPtr, cuabi_stream_t hStream) { return ca_front_free_async(&cuda_rt, devPtr, hStream, 0); }
/* Interposed cudaMallocAsync_ptsz: the runtime's own contract, served through front.c. */
ca_rt_err cudaMallocAsync_ptsz(void **devPtr, size_t size, cuabi_stream_t hStream) { return ca_front_malloc_async(&cuda_rt, devPtr, size, hStream, 1); }
/* Interposed cudaFreeAsync_ptsz: the runtime's own contract, served through front.c. */
ca_rt_err cudaFreeAsync_ptsz(void *devPtr, cuabi_stream_t hStream) { return ca_front_free_async(&cuda_rt, devPtr, hStream, 1); }
/* Interposed cudaMemGetInfo: the runtime's own contract, served through front.c. */
ca_rt_err cudaMemGetInfo(size_t *free, size_t *total) { return ca_front_mem_get_info(&cuda_rt, free, total); }
/* Interposed cudaDeviceReset: the runtime's own contract, served through front.c. */
ca_rt_err cudaDeviceReset(void) { return ca_front_device_reset(&cuda_rt); }
/* Interposed cudaDeviceSynchronize: the runtime's own contract, served through front.c. */
ca_rt_err cudaDeviceSynchronize(void) { return ca_front_device_synchronize(&cuda_rt); }
/* Interposed cudaStreamCreate: the runtime's own contract, served through front.c. */
ca_rt_err cudaStreamCreate(cuabi_stream_t *pStream) { return ca_front_stream_create(&cuda_rt, CA_CTOR_PLAIN, (void **)pStream, 0, 0); }
/* Interposed cudaStreamCreateWithFlags: the runtime's own contract, served through front.c. */
ca_rt_err cudaStreamCreateWithFlags(cuabi_stream_t *pStream, unsigned int flags) { return ca_front_stream_create(&cuda_rt, CA_CTOR_FLAGS, (void **)pStream, flags, 0); }
/* Interposed cudaStreamCreateWithPriority: the runtime's own contract, served through front.c. */
ca_rt_err cudaStreamCreateWithPriority(cuabi_stream_t *pStream, unsigned int flags, int priority) { return ca_front_stream_create(&cuda_rt, CA_CTOR_PRIORITY, (void **)pStream, flags, priority); }
/* Interposed cudaStreamDestroy: the runtime's own contract, served through front.c. */
ca_rt_err cudaStreamDestroy(cuabi_stream_t stream) { return ca_front_stream_destroy(&cuda_rt, stream); }
