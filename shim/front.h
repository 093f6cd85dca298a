/* The shared logic of every interposed call, for any runtime descriptor. cuda/door.c (CUDA)
 * and hip/hip.c forward to these in one line each. Every function returns the runtime's own error code. */
#ifndef CACHEALLOC_SHIM_FRONT_H
#define CACHEALLOC_SHIM_FRONT_H

#include <stddef.h>

#include "runtime.h"

/* The allocation entry points themselves are front_lane.h's; these are their ways off the
 * lane. */
typedef struct ca_lane ca_lane;
/* The driver refused an allocation the cache does not serve: the cache makes room for it
 * (ca_make_room); true when it did, and the caller makes the call once more. */
CA_COLD bool ca_front_make_room(ca_runtime *rt);
/* cudaMalloc / hipMalloc with every check, arming the calling thread's lane. */
CA_COLD ca_rt_err ca_front_malloc_full(ca_runtime *rt, void **ptr, size_t size);
/* cudaMalloc / hipMalloc on the lane, on current device dev, that the thread cache missed. */
CA_COLD ca_rt_err ca_front_malloc_lane(ca_runtime *rt, int dev, void **ptr, size_t size);
/* cudaFree / hipFree with every check. */
CA_COLD ca_rt_err ca_front_free_full(ca_runtime *rt, void *ptr);
/* cudaFree / hipFree past the checks; counted: the device the calling thread's plain calls
 * are counted on (-1: none). Out of line: inlined into a door, it would cost the hit a frame. */
CA_NOINLINE ca_rt_err ca_front_free_lane(ca_runtime *rt, void *ptr, int counted);
/* cudaMallocAsync / hipMallocAsync with every check, arming the lane for the stream. */
CA_COLD ca_rt_err ca_front_malloc_async_full(ca_runtime *rt, void **ptr, size_t size,
                                             void *stream, int ptsz);
/* cudaMallocAsync / hipMallocAsync on lane l (its stream) that the thread cache missed. */
CA_COLD ca_rt_err ca_front_malloc_async_lane(ca_runtime *rt, const ca_lane *l, void **ptr,
                                             size_t size);
/* cudaFreeAsync / hipFreeAsync with every check. */
CA_COLD ca_rt_err ca_front_free_async_full(ca_runtime *rt, void *ptr, void *stream, int ptsz);
/* cudaFreeAsync / hipFreeAsync on lane l (its stream) that the thread cache did not keep. */
CA_COLD ca_rt_err ca_front_free_async_lane(ca_runtime *rt, const ca_lane *l, void *ptr);
/* cudaMemGetInfo / hipMemGetInfo: free is what the next single allocation can get under the
 * cache (ca_free_for_program), pending and cached blocks included. */
ca_rt_err ca_front_mem_get_info(ca_runtime *rt, size_t *free_bytes, size_t *total_bytes);
/* Device (context) dev lost its memory: the cache forgets it, its streams and its sticky
 * error. */
void ca_front_forget_device(ca_runtime *rt, int dev);
/* cudaDeviceReset / hipDeviceReset. */
ca_rt_err ca_front_device_reset(ca_runtime *rt);
/* cudaDeviceSynchronize / hipDeviceSynchronize. */
ca_rt_err ca_front_device_synchronize(ca_runtime *rt);

/* Which stream-creation entry point the program called. */
typedef enum ca_stream_ctor { CA_CTOR_PLAIN, CA_CTOR_FLAGS, CA_CTOR_PRIORITY } ca_stream_ctor;
/* cudaStreamCreate{,WithFlags,WithPriority} and the HIP forms. */
ca_rt_err ca_front_stream_create(ca_runtime *rt, ca_stream_ctor ctor, void **stream,
                                 unsigned flags, int priority);
/* cudaStreamDestroy / hipStreamDestroy. */
ca_rt_err ca_front_stream_destroy(ca_runtime *rt, void *stream);
/* hipStreamBeginCapture, through the real one: the arena quiet first (capture.h). */
ca_rt_err ca_front_begin_capture(ca_runtime *rt, void *stream, unsigned mode);
/* hipStreamEndCapture, through the real one: the capture forgotten once it ended. */
ca_rt_err ca_front_end_capture(ca_runtime *rt, void *stream, void **graph);

/* The program turned the current device's access to owner's memory on or off, and the driver
 * agreed: the cache's mapped memory of owner (an arena device) follows. One line on stderr
 * when the driver refused that. */
void ca_front_peer_access(ca_runtime *rt, int owner, bool on);

#endif
