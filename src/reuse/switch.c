/* The one switch of a device from its single-stream mode to fences, which stops allocations
 * until its device synchronization returned, and the synchronizations the contract makes, each
 * in an unlocked window (block/window.c). The bottom of the module: it calls nothing of the
 * rest. */
#include "reuse/reuse.h"
#include "base/clock.h"
#include "base/ca_assert.h"

int ca_reuse_sync(ca_arena *a, ca_device *d, bool alone)
{
    d->st.device_syncs++;
    if (alone)
        __atomic_store_n(&d->reuse.switching, 1, __ATOMIC_RELEASE);
    uint64_t t0 = ca_now_ns();
    ca_window_begin(d);
    int rc = a->be.device_synchronize(a->be.ctx, d->id);
    uint64_t waited = ca_now_ns() - t0;
    if (!alone) {
        ca_window_end(d);
        d->st.sync_wait_ns += waited;
        return rc;
    }
    /* Not ca_window_end: it would wait for this very switch. */
    ca_lock_acquire(&d->lock);
    d->st.sync_wait_ns += waited;
    __atomic_store_n(&d->reuse.switching, 0, __ATOMIC_RELEASE);
    ca_futex_wake_all(&d->reuse.switching);
    ca_window_closed(d);
    return rc;
}

void ca_reuse_switch(ca_arena *a, ca_device *d)
{
    ca_window_wait_switch(d);
    if (d->reuse.fenced)
        return;
    bool safe = a->cfg.reuse != CA_REUSE_STREAM; /* safe and sync */
    if (ca_quiet(a) && safe && a->cfg.pool != CA_POOL_NONE) {
        d->reuse.sync_owed = true; /* until then the device serves nothing quietly */
        return;
    }
    d->reuse.fenced = true;
    if (!safe || a->cfg.pool == CA_POOL_NONE)
        return;
    (void)ca_reuse_sync(a, d, true);
}

void ca_reuse_other_stream(ca_arena *a, ca_device *d)
{
    /* A block a thread keeps from a plain free may have been used on that stream: thread
     * caches give such blocks back to the fences from now on. */
    __atomic_store_n(&d->head.streams_seen, 1, __ATOMIC_RELEASE);
    if (!d->reuse.fenced)
        ca_reuse_switch(a, d);
}

void ca_reuse_stream_used(ca_arena *a, ca_device *d, ca_stream_t s)
{
    if (s != CA_STREAM_LEGACY)
        ca_reuse_other_stream(a, d);
}
