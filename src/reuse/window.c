/* Unlocked windows: a thread drops its device's lock around a blocking device call, and the
 * one switch of a device from its single-stream fast path to fences, which stops allocations
 * until its device synchronization returned. */
#include "arena_internal.h"

void ca_window_begin(ca_device *d)
{
    d->reuse.windows++;
    ca_lock_release(&d->lock);
}

void ca_window_end(ca_device *d)
{
    ca_lock_acquire(&d->lock);
    while (__atomic_load_n(&d->reuse.switching, __ATOMIC_ACQUIRE)) {
        ca_lock_release(&d->lock);
        ca_futex_wait(&d->reuse.switching, 1);
        ca_lock_acquire(&d->lock);
    }
    if (--d->reuse.windows == 0)
        ca_futex_wake_all(&d->reuse.windows);
}

void ca_wait_switch(ca_device *d)
{
    while (__atomic_load_n(&d->reuse.switching, __ATOMIC_ACQUIRE)) {
        ca_lock_release(&d->lock);
        ca_futex_wait(&d->reuse.switching, 1);
        ca_lock_acquire(&d->lock);
    }
}

/* Leave the single-stream fast path: blocks freed so far were safe by stream order alone, so
 * wait once for the device before any other stream may receive them. Drops the lock. */
void ca_fence_switch(ca_arena *a, ca_device *d)
{
    ca_wait_switch(d);
    if (d->reuse.fenced)
        return;
    if (ca_quiet(a) && a->cfg.reuse == CA_REUSE_SAFE && a->cfg.pool != CA_POOL_NONE) {
        d->reuse.sync_owed = true; /* until then the device serves nothing quietly */
        return;
    }
    d->reuse.fenced = true;
    if (a->cfg.reuse != CA_REUSE_SAFE || a->cfg.pool == CA_POOL_NONE)
        return;
    __atomic_store_n(&d->reuse.switching, 1, __ATOMIC_RELEASE);
    d->st.device_syncs++;
    ca_window_begin(d);
    a->be.device_synchronize(a->be.ctx, d->id);
    ca_lock_acquire(&d->lock);
    __atomic_store_n(&d->reuse.switching, 0, __ATOMIC_RELEASE);
    ca_futex_wake_all(&d->reuse.switching);
    if (--d->reuse.windows == 0)
        ca_futex_wake_all(&d->reuse.windows);
}
