/* Unlocked windows: a thread drops its device's lock around a blocking device call, and the
 * one switch of a device from its single-stream fast path to fences, which stops allocations
 * until its device synchronization returned. */
#include "arena_internal.h"

void ca_window_end(ca_device *d)
{
    ca_lock_acquire(&d->lock);
    while (__atomic_load_n(&d->switching, __ATOMIC_ACQUIRE)) {
        ca_lock_release(&d->lock);
        ca_futex_wait(&d->switching, 1);
        ca_lock_acquire(&d->lock);
    }
    if (--d->windows == 0)
        ca_futex_wake_all(&d->windows);
}

void ca_wait_switch(ca_device *d)
{
    while (__atomic_load_n(&d->switching, __ATOMIC_ACQUIRE)) {
        ca_lock_release(&d->lock);
        ca_futex_wait(&d->switching, 1);
        ca_lock_acquire(&d->lock);
    }
}

/* Leave the single-stream fast path: blocks freed so far were safe by stream order alone, so
 * wait once for the device before any other stream may receive them. Drops the lock. */
void ca_fence_switch(ca_arena *a, ca_device *d)
{
    ca_wait_switch(d);
    if (d->fenced)
        return;
    bool safe = a->cfg.reuse != CA_REUSE_STREAM; /* safe and sync */
    if (ca_quiet(a) && safe && a->cfg.pool != CA_POOL_NONE) {
        d->sync_owed = true; /* until then the device serves nothing quietly */
        return;
    }
    d->fenced = true;
    if (!safe || a->cfg.pool == CA_POOL_NONE)
        return;
    __atomic_store_n(&d->switching, 1, __ATOMIC_RELEASE);
    d->st.device_syncs++;
    ca_window_begin(d);
    a->be.device_synchronize(a->be.ctx, d->id);
    ca_lock_acquire(&d->lock);
    __atomic_store_n(&d->switching, 0, __ATOMIC_RELEASE);
    ca_futex_wake_all(&d->switching);
    if (--d->windows == 0)
        ca_futex_wake_all(&d->windows);
}
