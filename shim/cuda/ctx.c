/* Context slots. The table is read without a lock on every call (a thread remembers its last
 * context and slot, checked against the table); a new context takes the lock once. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "arena/arena.h"
#include "ctx.h"
#include "driver.h"
#include "lane.h"

#define CUDA_ERROR_INVALID_CONTEXT 201u

static _Atomic(void *) slots[CA_MAX_DEVICES];
/* The device whose primary context a slot holds, or -1: found again once the context went
 * inactive, when the driver no longer names it. */
static _Atomic int primary_dev[CA_MAX_DEVICES];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;

static _Thread_local void *tl_ctx;
static _Thread_local int tl_slot = -1;

void *ca_drv_primary_of(int dev)
{
    const ca_drv_fns *f = ca_drv_fns_get();
    unsigned flags;
    int active = 0;
    void *ctx = NULL;
    /* Retaining an inactive primary context would create it: only an active one is asked. */
    if (f == NULL || f->primary_get_state(dev, &flags, &active) != 0 || !active ||
        f->primary_retain(&ctx, dev) != 0)
        return NULL;
    f->primary_release(dev);
    return ctx;
}

void *ca_drv_slot_context(int slot)
{
    return slot >= 0 && slot < CA_MAX_DEVICES
               ? atomic_load_explicit(&slots[slot], memory_order_acquire)
               : NULL;
}

int ca_drv_slot_of(void *ctx)
{
    for (int i = 0; i < CA_MAX_DEVICES; i++)
        if (atomic_load_explicit(&slots[i], memory_order_acquire) == ctx)
            return i;
    return -1;
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* A forked child starts with no slot: the parent's contexts are not its own. Registered at the
 * first claim, since until then no slot holds anything to forget. */
static void reset_at_fork(void)
{
    pthread_atfork(NULL, NULL, ca_drv_slots_after_fork);
}

/* A slot for the current context ctx, first met now: its device's ordinal when it is that
 * device's primary context and the ordinal is free, else the highest free slot. */
static int claim(void *ctx)
{
    pthread_once(&fork_once, reset_at_fork);
    const ca_drv_fns *f = ca_drv_fns_get();
    int dev = -1;
    if (f != NULL && (f->ctx_get_device(&dev) != 0 || ca_drv_primary_of(dev) != ctx))
        dev = -1;
    pthread_mutex_lock(&slots_lock);
    int slot = ca_drv_slot_of(ctx);
    if (slot < 0 && dev >= 0 && dev < CA_MAX_DEVICES && atomic_load(&slots[dev]) == NULL)
        slot = dev;
    for (int i = CA_MAX_DEVICES - 1; slot < 0 && i >= 0; i--)
        if (atomic_load(&slots[i]) == NULL)
            slot = i;
    if (slot >= 0) {
        atomic_store(&primary_dev[slot], dev);
        atomic_store_explicit(&slots[slot], ctx, memory_order_release);
    }
    pthread_mutex_unlock(&slots_lock);
    return slot;
}

int ca_drv_primary_slot(int dev)
{
    for (int i = 0; i < CA_MAX_DEVICES; i++)
        if (atomic_load_explicit(&slots[i], memory_order_acquire) != NULL &&
            atomic_load(&primary_dev[i]) == dev)
            return i;
    return -1;
}

/* The calling thread's current context changed, or its slot was dropped: look it up. */
static CA_COLD void remember(void *ctx)
{
    int s = ca_drv_slot_of(ctx);
    tl_ctx = ctx;
    tl_slot = s >= 0 ? s : claim(ctx);
}

ca_rt_err ca_drv_get_slot(int *slot)
{
    const ca_drv_fns *f = ca_drv_fns_get();
    void *ctx = NULL;
    if (f == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    ca_rt_err e = f->ctx_get_current(&ctx);
    if (e != 0)
        return e;
    if (ctx == NULL) {
        *slot = CA_SLOT_NONE;
        return 0;
    }
    if (ctx != tl_ctx || tl_slot < 0 ||
        atomic_load_explicit(&slots[tl_slot], memory_order_acquire) != ctx)
        remember(ctx);
    *slot = tl_slot;
    return 0;
}

ca_rt_err ca_drv_set_slot(int slot)
{
    const ca_drv_fns *f = ca_drv_fns_get();
    if (f == NULL)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (slot == CA_SLOT_NONE)
        return f->ctx_set_current(NULL);
    if (slot < 0 || slot >= CA_MAX_DEVICES)
        return CUDA_ERROR_INVALID_CONTEXT;
    void *ctx = atomic_load_explicit(&slots[slot], memory_order_acquire);
    return ctx != NULL ? f->ctx_set_current(ctx) : CUDA_ERROR_INVALID_CONTEXT;
}

void ca_drv_slot_drop(int slot)
{
    if (slot >= 0 && slot < CA_MAX_DEVICES) {
        atomic_store_explicit(&slots[slot], NULL, memory_order_release);
        atomic_store(&primary_dev[slot], -1);
        ca_lane_invalidate(); /* lanes map their context to its slot */
    }
}

void ca_drv_slots_after_fork(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    slots_lock = fresh;
    for (int i = 0; i < CA_MAX_DEVICES; i++) {
        atomic_store(&slots[i], NULL);
        atomic_store(&primary_dev[i], -1);
    }
    tl_ctx = NULL;
    tl_slot = -1;
    ca_lane_invalidate();
}
