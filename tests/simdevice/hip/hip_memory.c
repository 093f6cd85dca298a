/* hip_memory.c: the HIP memory calls (allocation, copies, sets, pointer queries). */
#include "hip_front.h"

__attribute__((constructor)) static void hip_flavor(void)
{
    sd_set_flavor("hip");
}

/* Identifies the stand-in, so a test can show the simulator answered. */
API const char *simdev_identify(void) { return "simdevice hip"; }
/* Copies device `device`'s counters (-1: totals) to *out; 0 on success. */
API int simdev_get_counters(int device, struct simdev_counters *out) { return sd_get_counters(device, out); }
/* The price in force named by its variable, microseconds; -1 when no price has that name. */
API double simdev_get_price(const char *name) { return sd_config_price(name); }

API hipError_t hipExtMallocWithFlags(void **p, size_t n, unsigned f);
API hipError_t hipMallocAsync(void **p, size_t n, hipStream_t s);
API hipError_t hipStreamSynchronize(hipStream_t s);

/* Allocates device memory on the current device. */
API hipError_t hipMalloc(void **p, size_t n)
{
    /* Some ROCm releases implement hipMalloc over their own exported entry points: the call
     * goes through the PLT, where a preloaded library's definition is found first. */
    if (sd_hip_reentrant() == 1)
        return hipExtMallocWithFlags(p, n, 0);
    /* The same over an entry point an allocator serves itself (a model, not a known release). */
    if (sd_hip_reentrant() == 2) {
        hipError_t e = hipMallocAsync(p, n, NULL);
        return e == 0 ? hipStreamSynchronize(NULL) : e;
    }
    return hip_ret(sd_malloc(p, n));
}
/* hipMalloc with flags (ignored). */
API hipError_t hipExtMallocWithFlags(void **p, size_t n, unsigned f) { (void)f; return hip_ret(sd_malloc(p, n)); }
/* Frees device memory after waiting for the whole device; managed memory too, as ROCm's
 * hipFree frees whatever hipMallocManaged returned (the CUDA driver's cuMemFree does alike). */
API hipError_t hipFree(void *p)
{
    int type, dev;
    void *dp, *hp;
    sd_pointer_info(p, &type, &dev, &dp, &hp);
    if (type == SD_PTR_MANAGED)
        return hip_ret(sd_host_free(p));
    return hip_ret(sd_free(p));
}
/* Stream-ordered allocation. */
API hipError_t hipMallocAsync(void **p, size_t n, hipStream_t s) { return hip_ret(sd_malloc_async(p, n, s, 0)); }
/* Stream-ordered free: takes effect when the stream reaches it. */
API hipError_t hipFreeAsync(void *p, hipStream_t s) { return hip_ret(sd_free_async(p, s, 0)); }
/* Base and size of the device allocation or pinned host block holding p; in VMM memory, of the
 * one mapping holding it, not its reservation, as the CUDA stand-in answers (measured there on
 * an H100, not on an AMD GPU). An address in none, a reserved but unmapped one too, is an
 * invalid value here (ROCm answers hipErrorNotFound or hipErrorInvalidValue, by release). */
static hipError_t range_of(void *p, void **base, size_t *size)
{
    struct sd_addr_query q;
    if (sd_addr_query(p, &q) != SD_OK)
        return hip_ret(SD_EINVAL);
    if (base)
        *base = (void *)q.base;
    if (size)
        *size = q.size;
    return hip_ret(SD_OK);
}
/* The range of the allocation holding p (range_of). */
API hipError_t hipMemGetAddressRange(void **base, size_t *size, void *p) { return range_of(p, base, size); }
/* The size of the allocation holding p, its start or inside, as ROCm answers it (the size of
 * the memory object holding p: the size asked); a NULL size or unknown memory is
 * hipErrorInvalidValue. */
API hipError_t hipMemPtrGetInfo(void *p, size_t *size)
{
    return size ? range_of(p, NULL, size) : hip_ret(SD_EINVAL);
}
/* Free and total memory of the current device. */
API hipError_t hipMemGetInfo(size_t *f, size_t *t) { return hip_ret(sd_mem_info(f, t)); }
/* The flags ROCm 5.2's hip_runtime_api.h documents for hipHostMalloc: hipHostMallocPortable,
 * Mapped, WriteCombined, NumaUser, Coherent, NonCoherent (Default is 0). */
#define HOST_PORTABLE 0x1u
#define HOST_MAPPED 0x2u
#define HOST_WRITECOMBINED 0x4u
#define HOST_NUMAUSER 0x20000000u
#define HOST_COHERENT 0x40000000u
#define HOST_NONCOHERENT 0x80000000u
#define HOST_COHERENCE (HOST_COHERENT | HOST_NONCOHERENT)

/* Pinned host memory, kept with its flags and priced as the CUDA driver's (the core's
 * SIMDEV_HOST_ALLOC_US*). A flag not documented, or Coherent with NonCoherent (which ROCm
 * refuses), is hipErrorInvalidValue. Zero bytes succeed with NULL, as documented. */
API hipError_t hipHostMalloc(void **p, size_t n, unsigned f)
{
    const unsigned known =
        HOST_PORTABLE | HOST_MAPPED | HOST_WRITECOMBINED | HOST_NUMAUSER | HOST_COHERENCE;
    if ((f & ~known) || (f & HOST_COHERENCE) == HOST_COHERENCE)
        return hip_ret(SD_EINVAL);
    return hip_ret(sd_host_alloc(p, n, f));
}
/* Deprecated alias of hipHostMalloc(p, n, 0). */
API hipError_t hipMallocHost(void **p, size_t n) { return hipHostMalloc(p, n, 0); }
/* Deprecated alias of hipHostMalloc(p, n, 0). */
API hipError_t hipMemAllocHost(void **p, size_t n) { return hipHostMalloc(p, n, 0); }
/* Deprecated alias of hipHostMalloc. */
API hipError_t hipHostAlloc(void **p, size_t n, unsigned f) { return hipHostMalloc(p, n, f); }
/* Frees pinned host memory by its start after waiting for the device; anything else is
 * hipErrorInvalidValue, as documented (device pointers included), and the block stays. */
API hipError_t hipHostFree(void *p) { return (hipError_t)sd_ret(sd_host_free(p), SD_EINVAL); }
/* Deprecated alias of hipHostFree. */
API hipError_t hipFreeHost(void *p) { return hipHostFree(p); }
/* The flags the pinned block holding p (its start or inside) was allocated with, as ROCm
 * stores them (no Mapped added, unlike CUDA's answer); other memory: hipErrorInvalidValue. */
API hipError_t hipHostGetFlags(unsigned *flags, void *p)
{
    unsigned f;
    if (!flags || !p || sd_host_query(p, NULL, NULL, &f) != SD_OK)
        return hip_ret(SD_EINVAL);
    *flags = f;
    return hip_ret(SD_OK);
}
/* Pinned host memory is reached from the device at its host address, at the start and inside;
 * flags other than 0 and memory that is not pinned (nor managed) are hipErrorInvalidValue. */
API hipError_t hipHostGetDevicePointer(void **dp, void *p, unsigned flags)
{
    int type, dev;
    void *d, *h;
    if (!dp || !p || flags)
        return hip_ret(SD_EINVAL);
    sd_pointer_info(p, &type, &dev, &d, &h);
    if (type != SD_PTR_HOST && type != SD_PTR_MANAGED)
        return hip_ret(SD_EINVAL);
    *dp = p;
    return hip_ret(SD_OK);
}
/* Managed memory: host memory counted against the device's capacity. */
API hipError_t hipMallocManaged(void **p, size_t n, unsigned f) { return hip_ret(sd_managed_alloc(p, n, f)); }

/* Synchronous copy on the null stream. */
API hipError_t hipMemcpy(void *d, const void *s, size_t n, int kind) { return hip_ret(sd_memcpy(d, s, n, kind, 0, 0, 1)); }
/* Synchronous copy on a given stream. */
API hipError_t hipMemcpyWithStream(void *d, const void *s, size_t n, int kind, hipStream_t st) { return hip_ret(sd_memcpy(d, s, n, kind, st, 0, 1)); }
/* Synchronous host-to-device copy. */
API hipError_t hipMemcpyHtoD(void *d, void *s, size_t n) { return hip_ret(sd_memcpy(d, s, n, 1, 0, 0, 1)); }
/* Synchronous device-to-host copy. */
API hipError_t hipMemcpyDtoH(void *d, void *s, size_t n) { return hip_ret(sd_memcpy(d, s, n, 2, 0, 0, 1)); }
/* Asynchronous copy, run by the stream's worker. */
API hipError_t hipMemcpyAsync(void *d, const void *s, size_t n, int kind, hipStream_t st) { return hip_ret(sd_memcpy(d, s, n, kind, st, 0, 0)); }
/* Memset queued on the null stream. */
API hipError_t hipMemset(void *d, int v, size_t n) { return hip_ret(sd_memset(d, v, n, 0, 0)); }
/* Byte memset queued on the null stream. */
API hipError_t hipMemsetD8(void *d, unsigned char v, size_t n) { return hip_ret(sd_memset(d, v, n, 0, 0)); }
/* Asynchronous memset. */
API hipError_t hipMemsetAsync(void *d, int v, size_t n, hipStream_t st) { return hip_ret(sd_memset(d, v, n, st, 0)); }

/* Classifies a pointer; memory HIP does not know is hipErrorInvalidValue, as in ROCm 5.2. */
API hipError_t hipPointerGetAttributes(struct hip_pointer_attribute *a, const void *p)
{
    if (!a || !p)
        return hip_ret(SD_EINVAL);
    int type, dev;
    void *dp, *hp;
    sd_pointer_info(p, &type, &dev, &dp, &hp);
    if (type == SD_PTR_UNREGISTERED)
        return hip_ret(SD_EINVAL);
    *a = (struct hip_pointer_attribute){.memoryType = type == SD_PTR_DEVICE ? 1 : 0,
                                        .device = dev, .devicePointer = dp, .hostPointer = hp,
                                        .isManaged = type == SD_PTR_MANAGED};
    return SD_OK;
}
