/* Unlocked windows: a thread drops its device's lock around a blocking device call, counted on
 * the device so that a reset waits for every open one; and the wait for a device's switch to
 * fences (reuse/switch.c), which stops allocations until its synchronization returned. The
 * lock layer's own: nothing here calls the contract. */
#include "block/block.h"
#include "base/ca_assert.h"

void ca_window_begin(ca_device *d)
{
    d->reuse.windows++;
    ca_lock_release(&d->lock);
}

void ca_window_wait_switch(ca_device *d)
{
    while (__atomic_load_n(&d->reuse.switching, __ATOMIC_ACQUIRE)) {
        ca_lock_release(&d->lock);
        ca_futex_wait(&d->reuse.switching, 1);
        ca_lock_acquire(&d->lock);
    }
}

/* The lock is held again: the window is closed, and a reset waiting for the last one may go. */
void ca_window_closed(ca_device *d)
{
    ca_assert(d->reuse.windows > 0);
    if (--d->reuse.windows == 0)
        ca_futex_wake_all(&d->reuse.windows);
}

void ca_window_end(ca_device *d)
{
    ca_lock_acquire(&d->lock);
    ca_window_wait_switch(d);
    ca_window_closed(d);
}

void ca_window_drain(ca_device *d, bool switches)
{
    for (uint32_t w; (w = d->reuse.windows) != 0 || (switches && d->reuse.switching);) {
        ca_lock_release(&d->lock);
        if (w)
            ca_futex_wait(&d->reuse.windows, w);
        else
            ca_futex_wait(&d->reuse.switching, 1);
        ca_lock_acquire(&d->lock);
    }
}

void ca_window_forget(ca_device *d)
{
    d->reuse.switching = 0;
    d->reuse.windows = 0;
    d->reuse.syncs_running = 0;
    d->reuse.sync_joiners = 0;
}
