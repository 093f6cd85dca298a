/* The driver entry points the CUDA door serves (cuda_abi.h, CUABI_SERVED), by index, and the
 * real driver function behind each. Below the door: the door's own entry points and those of
 * door_capture.c and pools.c find their real functions here, and the door alone
 * knows the shim's entry points. */
#ifndef CACHEALLOC_SHIM_CUDA_SERVED_H
#define CACHEALLOC_SHIM_CUDA_SERVED_H

#include <string.h>

#include "cuda_abi.h"

/* A function pointer as the data pointer dlsym and cuGetProcAddress deal in (POSIX guarantees
 * the two convert; memcpy says so without a cast ISO C frowns upon). */
static inline void *ca_drv_fn_ptr(void (*f)(void))
{
    void *p;
    memcpy(&p, &f, sizeof p);
    return p;
}

enum {
#define CA_DRV_INDEX(name, base, version, flags, proto, params) I_##name,
    CUABI_SERVED(CA_DRV_INDEX) N_SERVED
#undef CA_DRV_INDEX
};

/* A served entry point: its exported name, and how the real lookup names it. */
typedef struct ca_drv_served {
    const char *name, *base;
    int version, flags;
} ca_drv_served;

extern const ca_drv_served ca_drv_served_table[N_SERVED];

/* The index of a served driver symbol name (as exported, e.g. "cuMemAlloc_v2"), or -1. */
int ca_drv_served_index(const char *name);

/* The real driver function of served index i (NULL when the driver has none): what the real
 * lookup answers, else what the real dlsym answered for its exported name. */
void (*ca_drv_served_real(int i))(void);

/* The real function as type T. */
#define CA_DRV_REAL(T, i) ((T)ca_drv_served_real(i))

/* The real driver function behind the served entry point exported as `name`, or NULL. */
void (*ca_drv_real_fn(const char *name))(void);

/* The real dlsym answered p for served index i's exported name (a driver may hand out
 * different addresses for the same function by the two ways). */
void ca_drv_served_named(int i, void *p);

/* Whether p is the real function of served index i, by either way. */
int ca_drv_served_is_real(int i, const void *p);

#endif
