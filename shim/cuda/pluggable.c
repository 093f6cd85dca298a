/* Entry points with the shapes of PyTorch's CUDAPluggableAllocator, for frameworks that take
 * an allocator as a pair of C functions:
 *
 *   torch.cuda.memory.CUDAPluggableAllocator("libcachealloc.so",
 *       "cachealloc_pluggable_alloc", "cachealloc_pluggable_free")
 *
 * They are the CUDA door's stream-ordered allocation and free (front.c, as cuMemAllocAsync and
 * cuMemFreeAsync are served), so a block comes from the same arena and counts in the same
 * statistics whether the library was preloaded or only loaded by the framework. PyTorch frees
 * a block on the stream it was allocated on: the stream-ordered contract it already keeps. */
#include <stdint.h>
#include <sys/types.h>

#include "ctx.h"
#include "descriptor.h"
#include "driver.h"
#include "front.h"
#include "front_lane.h"

/* The door serves the calling thread's current context; the caller names a device. Its
 * primary context is made current for the call when the current context belongs to another
 * device (and only if it is active: a retain would create it). *prev gets the context to
 * restore. Returns 1 when switched, 0 when not needed, -1 when the device cannot be used. */
static int enter_device(int device, void **prev)
{
    const ca_drv_fns *f = ca_drv_fns_get();
    int cur = -1;
    if (device < 0)
        return -1;
    if (f == NULL) /* no driver loaded: the door answers for itself */
        return 0;
    if (f->ctx_get_current(prev) == 0 && *prev != NULL && f->ctx_get_device(&cur) == 0 &&
        cur == device)
        return 0;
    void *ctx = ca_drv_primary_of(device);
    if (ctx == NULL || f->ctx_set_current(ctx) != 0)
        return -1;
    return 1;
}

static void leave_device(int switched, void *prev)
{
    if (switched == 1)
        ca_drv_fns_get()->ctx_set_current(prev);
}

/* Public: size bytes on device for stream (PyTorch's alloc); NULL when refused or out of memory. */
CA_EXPORT void *cachealloc_pluggable_alloc(ssize_t size, int device, void *stream)
{
    ca_runtime *rt = &ca_drv_rt;
    void *p = NULL, *prev = NULL;
    if (size <= 0)
        return NULL;
    int switched = enter_device(device, &prev);
    if (switched < 0)
        return NULL;
    ca_rt_err e = ca_front_malloc_async(rt, &p, (size_t)size, stream, 0);
    leave_device(switched, prev);
    return e == rt->codes.success ? p : NULL;
}

/* Public: free ptr on stream (PyTorch's free: the stream it was allocated on); size unused. */
CA_EXPORT void cachealloc_pluggable_free(void *ptr, ssize_t size, int device, void *stream)
{
    ca_runtime *rt = &ca_drv_rt;
    void *prev = NULL;
    (void)size; /* the arena knows each block's size */
    if (ptr == NULL)
        return;
    /* The block's own context is the arena's business; the stream is looked up in the device's
     * context, as the real free would be called. */
    int switched = enter_device(device, &prev);
    (void)ca_front_free_async(rt, ptr, stream, 0);
    leave_device(switched, prev);
}
