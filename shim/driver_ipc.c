/* cuIpcGetMemHandle under the cache. A CUDA handle names the whole driver allocation holding
 * the pointer, and the importer gets that allocation's base. A block of the cache lies inside
 * a segment, one driver allocation shared with other blocks: the real export of a block that
 * does not start its segment would open, in the other process, at another block's bytes, and
 * nothing would say so. The policy (docs/shim.md, "Interprocess memory"):
 * - an address outside the cache's segments is the driver's business: the real call answers;
 * - a live block that starts a plain segment exports correctly as it is: the real call;
 * - any other address inside a segment is refused with the driver's own code for memory it
 *   cannot export, and one line on stderr, once per process, naming CACHEALLOC_POOL=none;
 * - from the first export of an address inside a segment on, the process's plain allocations
 *   are driver allocations of their own (they export correctly, as without the cache), and the
 *   cache gives back the memory it holds unused then. Stream-ordered memory stays cached: the
 *   driver never exports pool memory through cuIpcGetMemHandle anyway.
 * Memory opened with cuIpcOpenMemHandle is never the cache's: that call and cuIpcCloseMemHandle
 * are not served, and a free of such a pointer reaches the real driver (the arena does not
 * know it). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_abi.h"
#include "driver_real.h"
#include "init.h"
#include "process.h"
#include "lane.h"

typedef ca_rt_err (*get_handle_fn)(struct CUipcMemHandle_st *h, cuabi_deviceptr p);

static atomic_flag told = ATOMIC_FLAG_INIT;

/* A host address, never a device allocation: asked of the real export so that a refusal is
 * answered with the driver's own code for memory it cannot export. */
static char not_device_memory;

static get_handle_fn real_get_handle(void)
{
    void *p = ca_drv_lookup("cuIpcGetMemHandle", 4010, CUABI_GPA_LEGACY, "cuIpcGetMemHandle");
    get_handle_fn f;
    memcpy(&f, &p, sizeof f);
    return f;
}

/* The first export of a cache address: later plain allocations go to the driver, and what the
 * cache holds unused goes back, since only stream-ordered allocations will still use it. */
static void start_dedicating(ca_runtime *rt)
{
    int none = 0;
    if (atomic_compare_exchange_strong(&rt->dedicated, &none, 1)) {
        ca_lane_invalidate(); /* plain allocations leave the cache */
        ca_reclaim(rt->arena, -1);
    }
}

static ca_rt_err refuse(get_handle_fn real, struct CUipcMemHandle_st *h, cuabi_deviceptr p)
{
    if (!atomic_flag_test_and_set(&told))
        fprintf(stderr,
                "cachealloc: cuIpcGetMemHandle refused for %#llx: that block shares a driver "
                "allocation with other cached blocks, so the handle would open at other bytes "
                "in the importing process; blocks allocated from now on get driver allocations "
                "of their own; set CACHEALLOC_POOL=none to export any block\n",
                (unsigned long long)p);
    ca_rt_err e = real(h, (cuabi_deviceptr)(uintptr_t)&not_device_memory);
    return e != CUABI_SUCCESS ? e : CUABI_ERROR_INVALID_VALUE;
}

/* Exports the driver allocation holding p, unless it is a segment p's block does not start. */
CA_EXPORT ca_rt_err cuIpcGetMemHandle(struct CUipcMemHandle_st *h, cuabi_deviceptr p)
{
    get_handle_fn real = real_get_handle();
    if (real == NULL)
        return CUABI_ERROR_NOT_FOUND;
    ca_runtime *rt = ca_runtime_by_slot(CA_RT_CUDA);
    ca_place at;
    if (rt == NULL || !ca_cache_ready(rt) || !ca_locate(rt->arena, (void *)(uintptr_t)p, &at))
        return real(h, p);
    start_dedicating(rt);
    if (at.live && !at.expandable && at.block == at.seg_base)
        return real(h, p);
    return refuse(real, h, p);
}
