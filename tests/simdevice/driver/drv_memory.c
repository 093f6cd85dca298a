/* drv_memory.c: device, stream-ordered, managed and pinned allocations, pointer queries,
 * copies and sets. Each entry point checks the context, then lets the core do the work. */
#include <stdbool.h>
#include <string.h>

#include "drv.h"

/* Allocates device memory in the current context. */
API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
    DRV_TRY(drv_enter_live());
    /* The driver refuses a zero-byte allocation, unlike the runtime. */
    if (!p || n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return drv_ret(sd_malloc((void **)p, n));
}

/* Pitched device memory (cudaMallocPitch, cudaMalloc3D): rows padded to 512 bytes, as NVIDIA's
 * driver pads them; an element size other than 4, 8 or 16 is refused, as there. */
API CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width, size_t height,
                                unsigned elem)
{
    DRV_TRY(drv_enter_live());
    if (!p || !pitch || width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16) ||
        width > ((size_t)1 << 40) || height > ((size_t)1 << 40))
        return CUDA_ERROR_INVALID_VALUE;
    size_t row = (width + 511) & ~(size_t)511;
    CUresult rc = drv_ret(sd_malloc((void **)p, row * height));
    if (rc == CUDA_SUCCESS)
        *pitch = row;
    return rc;
}

/* Frees device or managed memory after waiting for the device, as a GPU driver does. */
API CUresult cuMemFree_v2(CUdeviceptr p)
{
    DRV_TRY(drv_enter_or_none(1));
    int type, dev;
    void *dp, *hp;
    sd_pointer_info((void *)p, &type, &dev, &dp, &hp);
    if (type == SD_PTR_MANAGED)
        return drv_ret(sd_host_free((void *)p));
    return drv_ret(sd_free((void *)p));
}

/* Free and total memory of the current context's device. */
API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_mem_info(free_bytes, total));
}

/* Stream-ordered allocation from the device's default pool. */
API CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_malloc_async((void **)p, n, s, 0));
}

/* Stream-ordered allocation; NULL names the calling thread's default stream. */
API CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_malloc_async((void **)p, n, s, 1));
}

/* Stream-ordered free: takes effect when the stream reaches it. */
API CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_free_async((void *)p, s, 0));
}

/* Stream-ordered free on the per-thread default stream for NULL. */
API CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_free_async((void *)p, s, 1));
}

/* Managed memory: host memory counted against the device's capacity. */
API CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned flags)
{
    DRV_TRY(drv_enter_live());
    if (!p || n == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return drv_ret(sd_managed_alloc((void **)p, n, flags));
}

/* The flags cuMemHostAlloc takes: CU_MEMHOSTALLOC_PORTABLE, _DEVICEMAP, _WRITECOMBINED. */
enum { HOSTALLOC_PORTABLE = 1, HOSTALLOC_DEVICEMAP = 2, HOSTALLOC_WRITECOMBINED = 4 };

/* Page-locked host memory: host memory kept with its flags, priced as an H100 pins (the core's
 * SIMDEV_HOST_ALLOC_US*). Flags outside the three are an invalid value. */
API CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags)
{
    DRV_TRY(drv_enter_live());
    if (!p || n == 0 ||
        (flags & ~(unsigned)(HOSTALLOC_PORTABLE | HOSTALLOC_DEVICEMAP | HOSTALLOC_WRITECOMBINED)))
        return CUDA_ERROR_INVALID_VALUE;
    return drv_ret(sd_host_alloc(p, n, flags));
}

/* Page-locked host memory without flags. */
API CUresult cuMemAllocHost_v2(void **p, size_t n)
{
    return cuMemHostAlloc(p, n, 0);
}

/* Frees page-locked host memory by its start, after waiting for the device; anything else
 * (an address inside a block, managed, malloc or device memory) is an invalid value, as an
 * H100 answers, and the block stays. */
API CUresult cuMemFreeHost(void *p)
{
    DRV_TRY(drv_enter_or_none(1));
    int type, dev;
    void *d, *h;
    sd_pointer_info(p, &type, &dev, &d, &h);
    if (p && type != SD_PTR_HOST)
        return CUDA_ERROR_INVALID_VALUE;
    return drv_ret(sd_host_free(p));
}

/* The flags of the pinned block holding p, at its start or inside. With unified addressing
 * every pinned block is mapped: an H100 answers DEVICEMAP whatever was asked (0x2 for none and
 * for cuMemAllocHost, 0x3 for PORTABLE, 0x6 for WRITECOMBINED). Other memory: invalid value. */
API CUresult cuMemHostGetFlags(unsigned *flags, void *p)
{
    DRV_TRY(drv_enter_live());
    unsigned f;
    if (!flags || sd_host_query(p, NULL, NULL, &f) != SD_OK)
        return CUDA_ERROR_INVALID_VALUE;
    *flags = f | HOSTALLOC_DEVICEMAP;
    return CUDA_SUCCESS;
}

/* Pinned host memory is mapped at the same address on the device (unified addressing), at the
 * block's start and inside it, as an H100 answers. */
API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dp, void *p, unsigned flags)
{
    DRV_TRY(drv_enter_live());
    int type, dev;
    void *d, *h;
    if (!dp || flags)
        return CUDA_ERROR_INVALID_VALUE;
    sd_pointer_info(p, &type, &dev, &d, &h);
    if (type != SD_PTR_HOST && type != SD_PTR_MANAGED)
        return CUDA_ERROR_INVALID_VALUE;
    *dp = (CUdeviceptr)p;
    return CUDA_SUCCESS;
}

/* Base and size of the device allocation or pinned host block holding p; in VMM memory, of the
 * one mapping holding it, not its reservation (measured on an H100). An address in none, a
 * reserved but unmapped one too, is not found, as there. */
API CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p)
{
    DRV_TRY(drv_enter_live());
    struct sd_addr_query q;
    if (sd_addr_query((void *)p, &q) != SD_OK)
        return CUDA_ERROR_NOT_FOUND;
    if (base)
        *base = (CUdeviceptr)q.base;
    if (size)
        *size = q.size;
    return CUDA_SUCCESS;
}

enum {
    PA_CONTEXT = 1, PA_MEMORY_TYPE = 2, PA_DEVICE_POINTER = 3, PA_HOST_POINTER = 4,
    PA_SYNC_MEMOPS = 6, PA_BUFFER_ID = 7, PA_IS_MANAGED = 8, PA_DEVICE_ORDINAL = 9,
    PA_IS_LEGACY_CUDA_IPC_CAPABLE = 10, PA_RANGE_START = 11, PA_RANGE_SIZE = 12, PA_MAPPED = 13,
    PA_MEMPOOL = 17, PA_MAPPING_SIZE = 18, PA_MAPPING_BASE = 19,
};
enum { MT_HOST = 1, MT_DEVICE = 2 };

/* What the attributes say of an address: its class and the ranges holding it. */
struct ptr {
    const void *p;
    int type, dev;
    void *dp, *hp;
    struct sd_addr_query q;
};

static struct ptr classify(CUdeviceptr p)
{
    struct ptr r = {.p = (const void *)p};
    sd_pointer_info(r.p, &r.type, &r.dev, &r.dp, &r.hp);
    sd_addr_query(r.p, &r.q);
    return r;
}

/* Writes one attribute of a classified pointer; false for an attribute not modelled. What an
 * H100 answers for VMM memory: no context, the reservation as the range, the mapping as the
 * mapping, no legacy IPC; for cuMemAlloc memory and pinned host memory the allocation with its
 * requested size, its 2 MiB pages as the mapping. An unknown address in a reservation still has
 * the reservation as its range. */
static bool put_attr(void *data, int attr, const struct ptr *r)
{
    bool known = r->type != SD_PTR_UNREGISTERED;
    switch (attr) {
    case PA_CONTEXT:
        *(CUcontext *)data = known && r->dev >= 0 && !r->q.vmm ? drv_primary(r->dev) : NULL;
        return true;
    case PA_MEMORY_TYPE:
        *(unsigned *)data = !known ? 0 : r->type == SD_PTR_HOST ? MT_HOST : MT_DEVICE;
        return true;
    case PA_DEVICE_POINTER:
        *(void **)data = r->dp;
        return true;
    case PA_HOST_POINTER:
        *(void **)data = r->hp;
        return true;
    /* The "boolean" attributes are 32-bit: what the runtime and programs pass for them. */
    case PA_SYNC_MEMOPS:
    case PA_MAPPED:
        *(unsigned *)data = known;
        return true;
    case PA_IS_MANAGED:
        *(unsigned *)data = r->type == SD_PTR_MANAGED;
        return true;
    case PA_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(unsigned *)data = known && r->q.legacy_ipc;
        return true;
    case PA_BUFFER_ID:
        *(unsigned long long *)data = !known ? 0 : r->q.size ? r->q.base : (uintptr_t)r->p;
        return true;
    case PA_DEVICE_ORDINAL:
        *(int *)data = known ? r->dev : -2;
        return true;
    case PA_RANGE_START:
        *(CUdeviceptr *)data = r->q.range_base;
        return true;
    case PA_RANGE_SIZE:
        *(size_t *)data = r->q.range_size;
        return true;
    case PA_MAPPING_BASE:
        *(CUdeviceptr *)data = known ? r->q.map_base : 0;
        return true;
    case PA_MAPPING_SIZE:
        *(size_t *)data = known ? r->q.map_size : 0;
        return true;
    case PA_MEMPOOL:
        *(void **)data = NULL;
        return true;
    default:
        return false;
    }
}

/* One attribute of a pointer; an address the driver does not know is an invalid value. */
API CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    struct ptr r = classify(p);
    if (r.type == SD_PTR_UNREGISTERED)
        return CUDA_ERROR_INVALID_VALUE;
    return put_attr(data, attr, &r) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Several attributes; unknown addresses get empty values and success, as documented. */
API CUresult cuPointerGetAttributes(unsigned n, int *attrs, void **data, CUdeviceptr p)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!attrs || !data)
        return CUDA_ERROR_INVALID_VALUE;
    struct ptr r = classify(p);
    for (unsigned i = 0; i < n; i++)
        if (data[i] && !put_attr(data[i], attrs[i], &r))
            return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

enum { K_HTOD = 1, K_DTOH = 2, K_DTOD = 3, K_ANY = 4 };

static CUresult copy(void *d, const void *s, size_t n, int kind, CUstream st, int ptsz, int wait)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_memcpy(d, s, n, kind, st, ptsz, wait));
}

#define PTR(x) ((void *)(x))

/* The synchronous copies run on the legacy stream (per-thread stream for _ptds) and wait. */
API CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy(PTR(d), PTR(s), n, K_ANY, 0, 0, 1); }
API CUresult cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy(PTR(d), PTR(s), n, K_ANY, 0, 1, 1); }
API CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { return copy(PTR(d), s, n, K_HTOD, 0, 0, 1); }
API CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void *s, size_t n) { return copy(PTR(d), s, n, K_HTOD, 0, 1, 1); }
API CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { return copy(d, PTR(s), n, K_DTOH, 0, 0, 1); }
API CUresult cuMemcpyDtoH_v2_ptds(void *d, CUdeviceptr s, size_t n) { return copy(d, PTR(s), n, K_DTOH, 0, 1, 1); }
API CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy(PTR(d), PTR(s), n, K_DTOD, 0, 0, 1); }
API CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy(PTR(d), PTR(s), n, K_DTOD, 0, 1, 1); }
/* The asynchronous copies are queued on the stream. */
API CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return copy(PTR(d), PTR(s), n, K_ANY, st, 0, 0); }
API CUresult cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return copy(PTR(d), PTR(s), n, K_ANY, st, 1, 0); }
API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st) { return copy(PTR(d), s, n, K_HTOD, st, 0, 0); }
API CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void *s, size_t n, CUstream st) { return copy(PTR(d), s, n, K_HTOD, st, 1, 0); }
API CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream st) { return copy(d, PTR(s), n, K_DTOH, st, 0, 0); }
API CUresult cuMemcpyDtoHAsync_v2_ptsz(void *d, CUdeviceptr s, size_t n, CUstream st) { return copy(d, PTR(s), n, K_DTOH, st, 1, 0); }
API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return copy(PTR(d), PTR(s), n, K_DTOD, st, 0, 0); }
API CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { return copy(PTR(d), PTR(s), n, K_DTOD, st, 1, 0); }

static CUresult set8(CUdeviceptr d, unsigned char v, size_t n, CUstream st, int ptsz)
{
    DRV_TRY(drv_enter_live());
    return drv_ret(sd_memset(PTR(d), v, n, st, ptsz));
}

/* Byte sets: the synchronous form is queued on the legacy (or per-thread) stream without a
 * wait, as the runtime's cudaMemset behaves over it. */
API CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { return set8(d, v, n, 0, 0); }
API CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n) { return set8(d, v, n, 0, 1); }
API CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st) { return set8(d, v, n, st, 0); }
API CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream st) { return set8(d, v, n, st, 1); }
