/* hip_vmm.c: ROCm's virtual memory management calls (all in hip_5.1, as ROCm 5.2 exports them)
 * over the core's model, with POSIX descriptor sharing as the CUDA stand-in has it. HIP's opaque
 * handle pointer carries the core's handle value. */
#include <stdint.h>

#include "hip_front.h"

/* The layouts of ROCm 5.2's header; the sim suite checks the header against the same numbers. */
_Static_assert(sizeof(struct hip_mem_allocation_prop) == 32, "hipMemAllocationProp size");
_Static_assert(offsetof(struct hip_mem_allocation_prop, location) == 4, "prop.location");
_Static_assert(offsetof(struct hip_mem_allocation_prop, requestedHandleType) == 12, "prop.rht");
_Static_assert(offsetof(struct hip_mem_allocation_prop, type) == 16, "prop.type");
_Static_assert(offsetof(struct hip_mem_allocation_prop, win32HandleMetaData) == 24, "prop.w32");
_Static_assert(sizeof(struct hip_mem_location) == 8, "hipMemLocation size");
_Static_assert(sizeof(struct hip_mem_access_desc) == 12, "hipMemAccessDesc size");
_Static_assert(offsetof(struct hip_mem_access_desc, flags) == 8, "desc.flags");

/* The device a property names, or -1 when it is not pinned memory on a device. */
static int prop_device(const struct hip_mem_allocation_prop *prop)
{
    return prop ? sd_vmm_prop_device(prop->type, prop->location.type, prop->location.id) : -1;
}

/* The granularity (2 MiB) for memory the property describes; option 0 minimum, 1 recommended. */
API hipError_t hipMemGetAllocationGranularity(size_t *g, const struct hip_mem_allocation_prop *prop, int option)
{
    if (option != 0 && option != 1)
        return hip_ret(SD_EINVAL);
    return hip_ret(sd_vmm_granularity(g, prop_device(prop)));
}

/* Reserves device address space; addr is a hint; flags must be 0. */
API hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment, void *addr, unsigned long long flags)
{
    if (flags)
        return hip_ret(SD_EINVAL);
    return hip_ret(sd_vmm_reserve(ptr, size, alignment, (uintptr_t)addr));
}

/* Frees a whole reservation that holds no mapping. */
API hipError_t hipMemAddressFree(void *ptr, size_t size) { return hip_ret(sd_vmm_free(ptr, size)); }

enum { HIP_HANDLE_POSIX_FD = 1 }; /* hipMemHandleTypePosixFileDescriptor */

/* Creates physical memory on the property's device, counted against its capacity. As in the
 * CUDA driver stand-in, the one handle type besides none is the POSIX descriptor (Win32 handles
 * are Windows'): anything else is hipErrorNotSupported, the code ROCm gives a type it lacks. */
API hipError_t hipMemCreate(void **handle, size_t size, const struct hip_mem_allocation_prop *prop, unsigned long long flags)
{
    int dev = prop_device(prop);
    if (flags || dev < 0)
        return hip_ret(SD_EINVAL);
    int type = prop->requestedHandleType;
    if (type != 0 && type != HIP_HANDLE_POSIX_FD)
        return hip_ret(SD_ENOTSUP);
    uint64_t h = 0;
    int rc = sd_vmm_create(handle ? &h : NULL, size, dev, type != 0);
    if (!rc)
        *handle = (void *)(uintptr_t)h;
    return hip_ret(rc);
}

/* Releases one reference of a handle (creation, import or retain); its memory goes with the
 * last one and its last mapping. */
API hipError_t hipMemRelease(void *handle) { return hip_ret(sd_vmm_release((uintptr_t)handle)); }

/* Writes a new descriptor (an int, the caller's to close) of memory created with the POSIX
 * descriptor type; every refusal is hipErrorInvalidValue, as the CUDA stand-in's. */
API hipError_t hipMemExportToShareableHandle(void *shareableHandle, void *handle, int handleType,
                                             unsigned long long flags)
{
    if (flags || handleType != HIP_HANDLE_POSIX_FD)
        return hip_ret(SD_EINVAL);
    return hip_ret(sd_vmm_export(shareableHandle, (uintptr_t)handle));
}

/* A new handle to the memory an exported descriptor names, passed as (void *)(uintptr_t)fd;
 * the caller keeps its descriptor. */
API hipError_t hipMemImportFromShareableHandle(void **handle, void *osHandle, int shHandleType)
{
    intptr_t fd = (intptr_t)osHandle;
    if (!handle || shHandleType != HIP_HANDLE_POSIX_FD || fd < 0 || fd > INT32_MAX)
        return hip_ret(SD_EINVAL);
    uint64_t h = 0;
    int rc = sd_vmm_import(&h, (int)fd);
    if (!rc)
        *handle = (void *)(uintptr_t)h;
    return hip_ret(rc);
}

/* The handle of the mapping holding addr (any address inside it), with one more reference. */
API hipError_t hipMemRetainAllocationHandle(void **handle, void *addr)
{
    uint64_t h = 0;
    int rc = sd_vmm_retain(handle ? &h : NULL, addr);
    if (!rc)
        *handle = (void *)(uintptr_t)h;
    return hip_ret(rc);
}

/* Maps a handle into a reservation, inaccessible until hipMemSetAccess; flags must be 0, and
 * the offset too: ROCm documents "currently must be zero" and its hipMemMap refuses any other
 * with hipErrorInvalidValue in its argument check (source, not measured). */
API hipError_t hipMemMap(void *ptr, size_t size, size_t offset, void *handle, unsigned long long flags)
{
    if (flags || offset)
        return hip_ret(SD_EINVAL);
    return hip_ret(sd_vmm_map(ptr, size, offset, (uintptr_t)handle));
}

/* Unmaps whole mappings after in-flight copies finish. */
API hipError_t hipMemUnmap(void *ptr, size_t size) { return hip_ret(sd_vmm_unmap(ptr, size)); }

/* Sets each described device's access to the whole mappings making up the range. */
API hipError_t hipMemSetAccess(void *ptr, size_t size, const struct hip_mem_access_desc *desc, size_t count)
{
    _Static_assert(sizeof *desc == sizeof(struct sd_vmm_access), "one access layout");
    return hip_ret(sd_vmm_set_access_list(ptr, size, (const struct sd_vmm_access *)desc, count));
}
