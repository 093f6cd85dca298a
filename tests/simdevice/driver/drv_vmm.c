/* drv_vmm.c: virtual memory management (reserve, create, map, set access), the calls that
 * expandable segments use, over the core's model. Handles are the core's handle values. */
#include "drv.h"

/* CUDA 13's layout; the sim suite compares these declarations with the real cuda.h. */
_Static_assert(sizeof(CUmemAllocationProp) == 32, "CUmemAllocationProp size");
_Static_assert(offsetof(CUmemAllocationProp, location) == 8, "prop.location");
_Static_assert(sizeof(struct sd_vmm_access) == 12, "CUmemAccessDesc size");

static int prop_device(const CUmemAllocationProp *prop)
{
    return prop ? sd_vmm_prop_device(prop->type, prop->location.type, prop->location.id) : -1;
}

/* The granularity (2 MiB) for memory the property describes; option 0 minimum, 1 recommended. */
API CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop, int option)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (option != 0 && option != 1)
        return CUDA_ERROR_INVALID_VALUE;
    return drv_ret(sd_vmm_granularity(g, prop_device(prop)));
}

/* Reserves virtual address space; addr is a hint; flags must be 0. */
API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
                                 unsigned long long flags)
{
    DRV_TRY(drv_enter());
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    return drv_ret(sd_vmm_reserve((void **)ptr, size, align, addr));
}

/* Frees a whole reservation that holds no mapping. */
API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    DRV_TRY(drv_enter());
    return drv_ret(sd_vmm_free((void *)ptr, size));
}

/* Creates physical memory on the property's device, counted against its capacity. The only
 * handle type Linux offers without IMEX is the POSIX descriptor (Win32 handles are Windows',
 * fabric handles need IMEX): anything else is not supported. */
API CUresult cuMemCreate(uint64_t *handle, size_t size, const CUmemAllocationProp *prop,
                         unsigned long long flags)
{
    DRV_TRY(drv_enter());
    int dev = prop_device(prop);
    if (flags || dev < 0)
        return CUDA_ERROR_INVALID_VALUE;
    int types = prop->requested_handle_types;
    if (types != 0 && types != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    return drv_ret(sd_vmm_create(handle, size, dev, types != 0));
}

/* Releases one reference of a handle (creation, import or retain); its memory goes with the
 * last one and its last mapping. */
API CUresult cuMemRelease(uint64_t handle)
{
    DRV_TRY(drv_enter());
    return drv_ret(sd_vmm_release(handle));
}

/* Writes a new descriptor (an int, the caller's to close) of memory created with the POSIX
 * descriptor type. Every refusal is CUDA_ERROR_INVALID_VALUE, as an H100 answers a handle
 * created without the type. */
API CUresult cuMemExportToShareableHandle(void *shareable, uint64_t handle, int type,
                                          unsigned long long flags)
{
    DRV_TRY(drv_enter());
    if (flags || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    return drv_ret(sd_vmm_export(shareable, handle));
}

/* A new handle to the memory an exported descriptor names, passed as (void *)(uintptr_t)fd;
 * the caller keeps its descriptor. */
API CUresult cuMemImportFromShareableHandle(uint64_t *handle, void *os_handle, int type)
{
    DRV_TRY(drv_enter());
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_INVALID_VALUE;
    intptr_t fd = (intptr_t)os_handle;
    if (fd < 0 || fd > INT32_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    return drv_ret(sd_vmm_import(handle, (int)fd));
}

/* The handle of the mapping holding addr (any address inside it), with one more reference. */
API CUresult cuMemRetainAllocationHandle(uint64_t *handle, void *addr)
{
    DRV_TRY(drv_enter());
    return drv_ret(sd_vmm_retain(handle, addr));
}

/* Maps a handle into a reservation, inaccessible until cuMemSetAccess; flags must be 0, and
 * the offset into the handle too ("currently must be zero", cuda.h): an H100 answered a
 * mapping from 6 MiB into a handle with CUDA_ERROR_NOT_SUPPORTED (docs/gpu.md, finding 14). */
API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, uint64_t handle,
                      unsigned long long flags)
{
    DRV_TRY(drv_enter());
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (offset)
        return CUDA_ERROR_NOT_SUPPORTED;
    return drv_ret(sd_vmm_map((void *)ptr, size, offset, handle));
}

/* Unmaps whole mappings after in-flight copies finish. */
API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    DRV_TRY(drv_enter());
    return drv_ret(sd_vmm_unmap((void *)ptr, size));
}

/* Sets each described device's access to the whole mappings making up the range. */
API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const struct sd_vmm_access *desc,
                            size_t count)
{
    DRV_TRY(drv_enter());
    return drv_ret(sd_vmm_set_access_list((void *)ptr, size, desc, count));
}
