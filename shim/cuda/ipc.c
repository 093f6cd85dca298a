/* The driver's interprocess memory calls under the cache. A CUDA handle names the whole driver
 * allocation holding the pointer, and the importer gets that allocation's base. A block of the
 * cache lies inside a segment, one driver allocation shared with other blocks: the real export
 * of a block that does not start its segment would open, in the other process, at another
 * block's bytes, and nothing would say so. The policy (docs/shim.md, "Interprocess memory"):
 * - an address outside the cache's segments is the driver's business: the real call answers;
 * - a live block that starts a plain segment exports correctly as it is: the real call;
 * - a live block of an expandable range, which the driver cannot export, gets the cache's own
 *   record (ipc/mapped.c), which cuIpcOpenMemHandle here opens in a process under the cache;
 * - any other address inside a segment is refused with the driver's own code for memory it
 *   cannot export, and one line on stderr, once per process, naming CACHEALLOC_POOL=none;
 * - from the first such refusal or export of a plain segment on, the process's plain
 *   allocations are driver allocations of their own (they export correctly, as without the
 *   cache), and the cache gives back the memory it holds unused then. Stream-ordered memory
 *   stays cached: the driver never exports pool memory through cuIpcGetMemHandle anyway.
 * cuIpcOpenMemHandle and cuIpcCloseMemHandle pass every driver handle and every address they
 * did not map to the real calls; a free of imported memory reaches the real driver (the arena
 * does not know it). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_abi.h"
#include "descriptor.h"
#include "driver.h"
#include "init.h"
#include "ipc/mapped.h"
#include "lane.h"
#include "process.h"

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
    if (atomic_compare_exchange_strong(&rt->plain_dedicated, &none, 1)) {
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

/* Exports the driver allocation holding p, unless it is a segment p's block does not start; a
 * live block of an expandable range as the cache's record. */
CA_EXPORT ca_rt_err cuIpcGetMemHandle(struct CUipcMemHandle_st *h, cuabi_deviceptr p)
{
    get_handle_fn real = real_get_handle();
    if (real == NULL)
        return CUABI_ERROR_NOT_FOUND;
    ca_runtime *rt = ca_runtime_by_index(CA_RT_CUDA);
    ca_place at;
    if (rt == NULL || !ca_cache_ready(rt) || !ca_locate(rt->arena, (void *)(uintptr_t)p, &at))
        return real(h, p);
    if (h != NULL && at.live && at.expandable &&
        ca_ipc_mapped_export(rt, &at, h->reserved) == CUABI_SUCCESS)
        return CUABI_SUCCESS;
    start_dedicating(rt);
    if (at.live && !at.expandable && at.block == at.seg_base)
        return real(h, p);
    return refuse(real, h, p);
}

typedef ca_rt_err (*open_fn)(cuabi_deviceptr *out, struct CUipcMemHandle_st h, unsigned flags);

/* The legacy import of a driver handle, at the ABI version the caller asked for; the cache's
 * record mapped by the cache. */
static ca_rt_err open_handle(int version, cuabi_deviceptr *out, struct CUipcMemHandle_st h,
                             unsigned flags)
{
    if (!ca_ipc_mapped_is_record(h.reserved)) {
        void *p = ca_drv_lookup("cuIpcOpenMemHandle", version, CUABI_GPA_LEGACY,
                                version >= 11000 ? "cuIpcOpenMemHandle_v2" : "cuIpcOpenMemHandle");
        open_fn real;
        memcpy(&real, &p, sizeof real);
        return real ? real(out, h, flags) : CUABI_ERROR_NOT_FOUND;
    }
    /* The driver's answers: only the lazy peer access flag; never in the exporting process. */
    if (out == NULL || (flags & ~(unsigned)CUABI_IPC_LAZY_ENABLE_PEER_ACCESS))
        return CUABI_ERROR_INVALID_VALUE;
    if (ca_ipc_mapped_is_own(h.reserved))
        return CUABI_ERROR_INVALID_CONTEXT;
    (void)ca_cache_ready(&ca_drv_rt); /* the driver's functions, whether or not it caches */
    void *ptr = NULL;
    ca_rt_err e = ca_ipc_mapped_open(&ca_drv_rt, h.reserved, &ptr);
    if (e == CUABI_SUCCESS)
        *out = (cuabi_deviceptr)(uintptr_t)ptr;
    return e;
}

/* cuIpcOpenMemHandle of CUDA 4.1. */
CA_EXPORT ca_rt_err cuIpcOpenMemHandle(cuabi_deviceptr *out, struct CUipcMemHandle_st h,
                                       unsigned flags)
{
    return open_handle(4010, out, h, flags);
}

/* cuIpcOpenMemHandle of CUDA 11, what cuda.h names it now. */
CA_EXPORT ca_rt_err cuIpcOpenMemHandle_v2(cuabi_deviceptr *out, struct CUipcMemHandle_st h,
                                          unsigned flags)
{
    return open_handle(11000, out, h, flags);
}

typedef ca_rt_err (*close_fn)(cuabi_deviceptr p);

/* Unmaps what a record's import mapped; any other address is the driver's. */
CA_EXPORT ca_rt_err cuIpcCloseMemHandle(cuabi_deviceptr p)
{
    ca_rt_err e;
    if (ca_ipc_mapped_close(&ca_drv_rt, (void *)(uintptr_t)p, &e))
        return e;
    void *f = ca_drv_lookup("cuIpcCloseMemHandle", 4010, CUABI_GPA_LEGACY, "cuIpcCloseMemHandle");
    close_fn real;
    memcpy(&real, &f, sizeof real);
    return real ? real(p) : CUABI_ERROR_NOT_FOUND;
}
