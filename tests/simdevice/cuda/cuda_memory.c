/* cuda_memory.c: the CUDA memory calls (allocation, copies, sets, pointer queries). */
#include "cuda_front.h"

__attribute__((constructor)) static void cuda_flavor(void)
{
    sd_set_flavor("cuda");
}

/* Identifies the stand-in, so a test can show the simulator answered. */
API const char *simdev_identify(void)
{
    return "simdevice cuda";
}

/* Copies device `device`'s counters (-1: totals) to *out; 0 on success. */
API int simdev_get_counters(int device, struct simdev_counters *out)
{
    return sd_get_counters(device, out);
}

/* Allocates device memory on the current device. */
API cudaError_t cudaMalloc(void **p, size_t n) { return cuda_ret(sd_malloc(p, n)); }
/* Frees device memory after waiting for the whole device. */
API cudaError_t cudaFree(void *p) { return cuda_ret(sd_free(p)); }
/* Stream-ordered allocation. */
API cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s) { return cuda_ret(sd_malloc_async(p, n, s, 0)); }
/* Stream-ordered allocation, per-thread default stream. */
API cudaError_t cudaMallocAsync_ptsz(void **p, size_t n, cudaStream_t s) { return cuda_ret(sd_malloc_async(p, n, s, 1)); }
/* Stream-ordered free: takes effect when the stream reaches it. */
API cudaError_t cudaFreeAsync(void *p, cudaStream_t s) { return cuda_ret(sd_free_async(p, s, 0)); }
/* Stream-ordered free, per-thread default stream. */
API cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s) { return cuda_ret(sd_free_async(p, s, 1)); }
/* Free and total memory of the current device. */
API cudaError_t cudaMemGetInfo(size_t *f, size_t *t) { return cuda_ret(sd_mem_info(f, t)); }
/* Pinned host memory (plain host memory here). */
API cudaError_t cudaMallocHost(void **p, size_t n) { return cuda_ret(sd_host_alloc(p, n, 0)); }
/* Pinned host memory with flags (ignored). */
API cudaError_t cudaHostAlloc(void **p, size_t n, unsigned flags) { (void)flags; return cuda_ret(sd_host_alloc(p, n, 0)); }
/* Frees pinned host memory. */
API cudaError_t cudaFreeHost(void *p) { return cuda_ret(sd_host_free(p)); }
/* Managed memory: host memory counted against the device's capacity. */
API cudaError_t cudaMallocManaged(void **p, size_t n, unsigned f) { return cuda_ret(sd_managed_alloc(p, n, f)); }

/* Synchronous copy on the legacy default stream. */
API cudaError_t cudaMemcpy(void *d, const void *s, size_t n, int kind) { return cuda_ret(sd_memcpy(d, s, n, kind, 0, 0, 1)); }
/* Synchronous copy on the per-thread default stream. */
API cudaError_t cudaMemcpy_ptds(void *d, const void *s, size_t n, int kind) { return cuda_ret(sd_memcpy(d, s, n, kind, 0, 1, 1)); }
/* Asynchronous copy, run by the stream's worker. */
API cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, int kind, cudaStream_t st) { return cuda_ret(sd_memcpy(d, s, n, kind, st, 0, 0)); }
/* Asynchronous copy, per-thread default stream for stream 0. */
API cudaError_t cudaMemcpyAsync_ptsz(void *d, const void *s, size_t n, int kind, cudaStream_t st) { return cuda_ret(sd_memcpy(d, s, n, kind, st, 1, 0)); }
/* Memset queued on the legacy default stream (not waited for). */
API cudaError_t cudaMemset(void *d, int v, size_t n) { return cuda_ret(sd_memset(d, v, n, 0, 0)); }
/* Memset queued on the per-thread default stream. */
API cudaError_t cudaMemset_ptds(void *d, int v, size_t n) { return cuda_ret(sd_memset(d, v, n, 0, 1)); }
/* Asynchronous memset. */
API cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t st) { return cuda_ret(sd_memset(d, v, n, st, 0)); }
/* Asynchronous memset, per-thread default stream for stream 0. */
API cudaError_t cudaMemsetAsync_ptsz(void *d, int v, size_t n, cudaStream_t st) { return cuda_ret(sd_memset(d, v, n, st, 1)); }

/* Classifies a pointer (unregistered host memory succeeds, as since CUDA 11). */
API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    if (!a)
        return cuda_ret(SD_EINVAL);
    int type, dev;
    void *dp, *hp;
    sd_pointer_info(p, &type, &dev, &dp, &hp);
    *a = (struct cudaPointerAttributes){.type = type, .device = dev, .devicePointer = dp,
                                        .hostPointer = hp};
    return SD_OK;
}
