/* Quiet while a stream capture is under way. A capture forbids calls that the arena makes on
 * its own behalf: an event record on the capturing stream (it would belong to the graph), a
 * query of such an event, any work on the legacy stream beside a blocking capture, a device
 * synchronization, and in global mode every allocation, free, query and synchronization from
 * any thread. So while one is under way the arena makes none: it serves blocks that are
 * certainly reusable (free in the pool, or an empty segment known safe), refuses the rest, and
 * keeps what needs the device (a fence, the switch away from the single-stream mode, the
 * watch of a destroyed stream) for later, as PyTorch defers its events until no capture is
 * under way. Every backend call is made under a device lock or inside a counted unlocked
 * window, and the checks read `quiet` after taking the lock; ca_quiet_begin takes each lock
 * and waits out the windows, so no call that started before it can land in the capture. */
#include "arena/internal.h"

/* Under d's lock: until no thread is inside a window of d (the lock is dropped meanwhile). */
static bool wait_windows(ca_arena *a, ca_device *d, void *ctx)
{
    (void)a, (void)ctx;
    ca_window_drain(d, false);
    return false;
}

void ca_quiet_begin(ca_arena *a)
{
    __atomic_add_fetch(&a->quiet, 1, __ATOMIC_SEQ_CST);
    ca_for_each_device_locked(a, wait_windows, NULL);
}

void ca_quiet_end(ca_arena *a)
{
    __atomic_sub_fetch(&a->quiet, 1, __ATOMIC_SEQ_CST);
}

/* The synchronization owed since the quiet: before it, blocks freed in single-stream mode may still
 * be in use, and fences recorded after a stream's unwatched destruction prove nothing. */
static void settle(ca_arena *a, ca_device *d)
{
    d->reuse.sync_owed = false;
    if (!d->reuse.fenced && a->cfg.pool != CA_POOL_NONE) {
        ca_reuse_switch(a, d);
        return;
    }
    ca_reuse_wait_device(a, d);
    if (a->cfg.pool == CA_POOL_NONE) { /* frees made quietly kept their segments */
        int n;
        ca_segment **list = ca_collect_empty(a, d, true, UINT64_MAX, &n);
        d->st.driver_free_calls += (uint64_t)n;
        ca_window_begin(d);
        ca_release_list(a, d, list, n);
        ca_window_end(d);
    }
}

/* Not quiet: pays what is owed and returns false. Quiet: true where d cannot serve without the
 * device (not ready, or its single-stream mode ended unsynchronized). */
bool ca_quiet_refuses(ca_arena *a, ca_device *d)
{
    if (!ca_quiet(a)) {
        if (d->reuse.sync_owed)
            settle(a, d);
        return false;
    }
    return !d->ready || (d->reuse.sync_owed && !d->reuse.fenced);
}
