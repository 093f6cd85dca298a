/* Driver contexts as the arena's devices. The arena keys everything by a small device number;
 * at the driver level memory belongs to a context, so each context the program uses gets its
 * own number (a slot): a device's primary context the device's ordinal, a context the program
 * created a free number from the top. A block is never handed to another context. */
#ifndef CACHEALLOC_SHIM_CUDA_CTX_H
#define CACHEALLOC_SHIM_CUDA_CTX_H

#include "runtime.h"

/* The slot of "no current context". */
#define CA_SLOT_NONE (-2)

/* The slot of the calling thread's current context (CA_SLOT_NONE without one, -1 when every
 * slot is taken): the arena's "current device". Returns the driver's code. */
ca_rt_err ca_drv_get_slot(int *slot);

/* Makes slot's context current on the calling thread (CA_SLOT_NONE: none). */
ca_rt_err ca_drv_set_slot(int slot);

/* The slot of context ctx, or -1 when the shim never met it. */
int ca_drv_slot_of(void *ctx);

/* The context slot holds, or NULL. */
void *ca_drv_slot_context(int slot);

/* The primary context of device dev while it is active, else NULL. */
void *ca_drv_primary_of(int dev);

/* The slot of device dev's primary context, active or not, or -1 when it has none. */
int ca_drv_primary_slot(int dev);

/* The context of slot is gone (destroyed): its number may name another one later. */
void ca_drv_slot_drop(int slot);

/* In a forked child: the parent's contexts are not the child's (registered with pthread_atfork
 * at the first slot claimed). */
void ca_drv_slots_after_fork(void);

#endif
