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

/* Creates physical memory on the property's device, counted against its capacity. */
API CUresult cuMemCreate(uint64_t *handle, size_t size, const CUmemAllocationProp *prop,
                         unsigned long long flags)
{
    DRV_TRY(drv_enter());
    int dev = prop_device(prop);
    if (flags || dev < 0)
        return CUDA_ERROR_INVALID_VALUE;
    return drv_ret(sd_vmm_create(handle, size, dev));
}

/* Releases a handle; its memory goes with its last mapping. */
API CUresult cuMemRelease(uint64_t handle)
{
    DRV_TRY(drv_enter());
    return drv_ret(sd_vmm_release(handle));
}

/* Maps a handle into a reservation, inaccessible until cuMemSetAccess; flags must be 0. */
API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, uint64_t handle,
                      unsigned long long flags)
{
    DRV_TRY(drv_enter());
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
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
