/* Finding the real driver. The runtime looks cuGetProcAddress_v2 up on its handle of
 * libcuda.so.1 first thing; the dlsym hook hands that result here. A program linked with
 * -lcuda never does: the driver is then one of its loaded objects, reopened by name (never
 * loaded by the shim). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "cuda_abi.h"
#include "driver.h"
#include "loader.h"
#include "real.h"

static _Atomic(void *) drv_handle;
static _Atomic(ca_gpa_v2_fn) real_gpa;
static atomic_int by_hook; /* 1: a runtime's own dlsym of cuGetProcAddress_v2 named it */

void ca_drv_note(void *handle, const char *name, void *p)
{
    if (p == NULL || strcmp(name, "cuGetProcAddress_v2") != 0)
        return;
    atomic_store(&by_hook, 1);
    ca_gpa_v2_fn f;
    memcpy(&f, &p, sizeof f);
    ca_gpa_v2_fn none = NULL;
    if (atomic_compare_exchange_strong(&real_gpa, &none, f))
        atomic_store(&drv_handle, handle);
}

const char *ca_drv_found_how(void)
{
    return atomic_load(&by_hook) ? "found through the program's dlsym and cuGetProcAddress"
                                 : "found loaded in the process (linked with -lcuda)";
}

/* The driver's handle and lookup, looked for among the loaded objects when the hook has seen
 * neither. */
static void find_driver(void)
{
    if (atomic_load_explicit(&real_gpa, memory_order_acquire) != NULL)
        return;
    void *h = atomic_load(&drv_handle);
    /* By its soname first; else whichever loaded object defines the lookup (a driver under
     * another file name). */
    if (h == NULL && ((h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY)) != NULL ||
                      (h = ca_real_find("cuGetProcAddress_v2")) != NULL))
        atomic_store(&drv_handle, h);
    if (h == NULL)
        return;
    void *p = ca_real_dlsym()(h, "cuGetProcAddress_v2");
    if (p != NULL)
        ca_drv_note(h, "cuGetProcAddress_v2", p);
    atomic_store(&by_hook, 0);
}

void *ca_drv_lookup(const char *base, int version, int flags, const char *exported)
{
    find_driver();
    ca_gpa_v2_fn gpa = atomic_load_explicit(&real_gpa, memory_order_acquire);
    void *p = NULL;
    int status = 0;
    if (gpa != NULL && gpa(base, &p, version, (uint64_t)flags, &status) == 0)
        return p;
    void *h = atomic_load(&drv_handle);
    return gpa == NULL && h != NULL ? ca_real_dlsym()(h, exported) : NULL;
}

static pthread_mutex_t fns_lock = PTHREAD_MUTEX_INITIALIZER;
static ca_drv_fns fns;
static atomic_int fns_ready;

#define LOOK(field, base, version, exported)                                     \
    do {                                                                         \
        void *p_ = ca_drv_lookup(base, version, CUABI_GPA_LEGACY, exported);        \
        memcpy(&f.field, &p_, sizeof p_);                                        \
        ok = ok && p_ != NULL;                                                   \
    } while (0)

const ca_drv_fns *ca_drv_fns_get(void)
{
    if (atomic_load_explicit(&fns_ready, memory_order_acquire))
        return &fns;
    pthread_mutex_lock(&fns_lock);
    if (!atomic_load(&fns_ready)) {
        ca_drv_fns f;
        int ok = 1;
        LOOK(ctx_get_current, "cuCtxGetCurrent", 4000, "cuCtxGetCurrent");
        LOOK(ctx_set_current, "cuCtxSetCurrent", 4000, "cuCtxSetCurrent");
        LOOK(ctx_get_device, "cuCtxGetDevice", 2000, "cuCtxGetDevice");
        LOOK(ctx_push, "cuCtxPushCurrent", 4000, "cuCtxPushCurrent_v2");
        LOOK(ctx_pop, "cuCtxPopCurrent", 4000, "cuCtxPopCurrent_v2");
        LOOK(primary_retain, "cuDevicePrimaryCtxRetain", 7000, "cuDevicePrimaryCtxRetain");
        LOOK(primary_release, "cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2");
        LOOK(primary_get_state, "cuDevicePrimaryCtxGetState", 7000, "cuDevicePrimaryCtxGetState");
        if (ok) {
            fns = f;
            atomic_store_explicit(&fns_ready, 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&fns_lock);
    return atomic_load(&fns_ready) ? &fns : NULL;
}
