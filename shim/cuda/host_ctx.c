/* Which context a pinned block belongs to, and its free's wait in that context: the hooks the
 * CUDA door gives the cache of pinned blocks (ca_runtime.host_owner and host_wait). Apart from
 * host.c, whose entry points reach the door's runtime table, which names these. */
#include "ctx.h"
#include "cuda_abi.h"
#include "descriptor.h"
#include "driver.h"

/* The context pins its block into, given a slot so that its destruction reaches the pool
 * (door.c, forget_slot): the driver frees a context's pinned memory with it. */
void *ca_drv_host_owner(void)
{
    int slot = -1;
    return ca_drv_get_slot(&slot) == CUABI_SUCCESS ? ca_drv_slot_context(slot) : NULL;
}

/* The driver's free finds pinned memory by its address, with any context current or none
 * (Numba's teardown pops every context, then runs its queued frees): with none, the wait is
 * the block's own context's, pushed and popped again so that the thread is left as it was. A
 * context the slots no longer hold is gone (its blocks were orphaned first) and never pushed. */
ca_rt_err ca_drv_host_wait(ca_runtime *rt, void *owner)
{
    ca_rt_err (*sync)(void) = rt->fn.device_synchronize;
    const ca_drv_fns *f = ca_drv_fns_get();
    void *current = NULL;
    if (f == NULL || owner == NULL || f->ctx_get_current(&current) != CUABI_SUCCESS ||
        current != NULL || ca_drv_slot_of(owner) < 0 || f->ctx_push(owner) != CUABI_SUCCESS)
        return sync();
    ca_rt_err e = sync();
    void *popped;
    f->ctx_pop(&popped);
    return e;
}
