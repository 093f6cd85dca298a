/* The CUDA door's address queries (address.h). A block of an expandable segment lies in driver
 * mappings that need not begin or end where it does, so the driver would answer a mapping (one
 * growth, measured on an H100: docs/gpu.md finding 11) and call the memory unfit for legacy
 * IPC. Code that exports what it queried, as UCX's cuda_ipc transport does (the range's base
 * exported, the offset sent), or registers it for RDMA, must see the block as a fresh cudaMalloc
 * of its size: its start, the size the program asked for, and exportable (the cache exports
 * such a block as its own record, ipc/mapped.c). A cached block of pinned host memory is one
 * driver allocation of its size class: its range is the size the program asked for, as a fresh
 * allocation's is (measured, docs/gpu.md finding 12). Every other address, attribute and
 * outcome is the driver's. A block of a plain segment keeps the driver's answer, its segment:
 * a CUDA handle names a whole driver allocation, so the segment's base is what UCX's pattern
 * must export (docs/shim.md, "Address queries"). */
#include <stdint.h>

#include "address.h"
#include "cuda_abi.h"
#include "process.h"
#include "served.h"

/* What the cache answers itself about an address: a live block of an expandable segment, or a
 * live block of pinned host memory; its start and requested size. Only a cache already made:
 * a query never starts one. */
static ca_range_kind served_block(cuabi_deviceptr p, uintptr_t *start, size_t *size)
{
    ca_range_kind k =
        ca_front_range(ca_runtime_by_index(CA_RT_CUDA), (void *)(uintptr_t)p, start, size);
    return k == CA_RANGE_PLAIN ? CA_RANGE_RUNTIME : k;
}

/* Overwrites one attribute the driver answered for one of the cache's blocks. */
static void answer(void *data, cuabi_pointer_attribute a, ca_range_kind kind, uintptr_t start,
                   size_t size)
{
    switch (a) {
    case CUABI_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        *(cuabi_deviceptr *)data = (cuabi_deviceptr)start;
        break;
    case CUABI_POINTER_ATTRIBUTE_RANGE_SIZE:
        *(size_t *)data = size;
        break;
    case CUABI_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        if (kind == CA_RANGE_MAPPED)
            *(unsigned *)data = 1;
        break;
    default:
        break;
    }
}

typedef ca_rt_err (*range_fn)(cuabi_deviceptr *base, size_t *size, cuabi_deviceptr p);
typedef ca_rt_err (*attr_fn)(void *data, cuabi_pointer_attribute a, cuabi_deviceptr p);
typedef ca_rt_err (*attrs_fn)(unsigned n, cuabi_pointer_attribute *a, void **data,
                              cuabi_deviceptr p);

/* The block's range for a block of an expandable segment; the driver's answer otherwise. */
CA_EXPORT ca_rt_err cuMemGetAddressRange_v2(cuabi_deviceptr *base, size_t *size,
                                            cuabi_deviceptr p)
{
    range_fn real = CA_DRV_REAL(range_fn, I_cuMemGetAddressRange_v2);
    if (real == NULL)
        return CUABI_ERROR_NOT_FOUND;
    ca_rt_err e = real(base, size, p);
    uintptr_t start;
    size_t n;
    if (e == CUABI_SUCCESS && served_block(p, &start, &n) != CA_RANGE_RUNTIME) {
        if (base != NULL)
            *base = (cuabi_deviceptr)start;
        if (size != NULL)
            *size = n;
    }
    return e;
}

/* The driver's answer, with the block's range and exportability for a block of an expandable
 * segment. */
CA_EXPORT ca_rt_err cuPointerGetAttribute(void *data, cuabi_pointer_attribute a,
                                          cuabi_deviceptr p)
{
    attr_fn real = CA_DRV_REAL(attr_fn, I_cuPointerGetAttribute);
    if (real == NULL)
        return CUABI_ERROR_NOT_FOUND;
    ca_rt_err e = real(data, a, p);
    uintptr_t start;
    size_t n;
    ca_range_kind kind = e == CUABI_SUCCESS ? served_block(p, &start, &n) : CA_RANGE_RUNTIME;
    if (kind != CA_RANGE_RUNTIME)
        answer(data, a, kind, start, n);
    return e;
}

/* Several attributes, as cuPointerGetAttribute answers each. */
CA_EXPORT ca_rt_err cuPointerGetAttributes(unsigned count, cuabi_pointer_attribute *a,
                                           void **data, cuabi_deviceptr p)
{
    attrs_fn real = CA_DRV_REAL(attrs_fn, I_cuPointerGetAttributes);
    if (real == NULL)
        return CUABI_ERROR_NOT_FOUND;
    ca_rt_err e = real(count, a, data, p);
    uintptr_t start;
    size_t n;
    ca_range_kind kind =
        e == CUABI_SUCCESS && a && data ? served_block(p, &start, &n) : CA_RANGE_RUNTIME;
    if (kind != CA_RANGE_RUNTIME)
        for (unsigned i = 0; i < count; i++)
            if (data[i] != NULL)
                answer(data[i], a[i], kind, start, n);
    return e;
}
