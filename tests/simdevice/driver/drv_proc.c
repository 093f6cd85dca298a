/* drv_proc.c: cuGetProcAddress, the way every runtime copy finds the driver's entry points:
 * by base name, the ABI version it was built for, and whether it wants the per-thread default
 * stream variant. Each base name lists the variants implemented here; the answer is the newest
 * one not newer than the version asked. Anything else answers CUDA_ERROR_NOT_FOUND. */
#include <string.h>

#include "drv.h"

/* The table needs only the entry points' addresses, so a declaration without parameters
 * serves; it keeps default visibility so that the definitions stay exported. */
#define L(name, version, fn) API CUresult fn();
#define P(name, version, fn) API CUresult fn();
#include "drv_procs.def"
#undef L
#undef P

struct proc {
    const char *name;
    int version;
    bool per_thread;
    drv_fn fn;
};

#define L(name, version, fn) {name, version, false, (drv_fn)fn},
#define P(name, version, fn) {name, version, true, (drv_fn)fn},

static CUresult gpa_v1(const char *symbol, void **pfn, int version, uint64_t flags);
static CUresult gpa_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status);

static const struct proc procs[] = {
#include "drv_procs.def"
    L("cuGetProcAddress", 11030, NULL)
    L("cuGetProcAddress", 12000, NULL)
};

CUresult drv_proc_lookup(const char *name, int version, bool per_thread, void **fn, int *status)
{
    const struct proc *best = NULL;
    bool known = false, has_pt = false;
    for (size_t i = 0; i < sizeof procs / sizeof *procs; i++)
        if (strcmp(procs[i].name, name) == 0 && procs[i].per_thread) {
            has_pt = true;
            break;
        }
    /* A name without a per-thread variant answers per-thread lookups with its legacy one. */
    bool want_pt = per_thread && has_pt;
    for (size_t i = 0; i < sizeof procs / sizeof *procs; i++) {
        const struct proc *p = &procs[i];
        if (p->per_thread != want_pt || strcmp(p->name, name) != 0)
            continue;
        known = true;
        if (p->version <= version && (!best || p->version > best->version))
            best = p;
    }
    if (!best) {
        *fn = NULL;
        *status = known ? 2 : 1;
        return CUDA_ERROR_NOT_FOUND;
    }
    /* The lookup hands itself out too, so that the runtime's later lookups come back here. */
    *fn = drv_fn_ptr(best->fn ? best->fn
                              : best->version >= 12000 ? (drv_fn)gpa_v2 : (drv_fn)gpa_v1);
    *status = 0;
    return CUDA_SUCCESS;
}

static CUresult gpa_v2(const char *symbol, void **pfn, int version, uint64_t flags, int *status)
{
    int st = 1;
    void *fn = NULL;
    if (!symbol || flags > 3) {
        if (status)
            *status = st;
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult rc = drv_proc_lookup(symbol, version, (flags & 2) != 0, &fn, &st);
    if (pfn)
        *pfn = fn;
    if (status)
        *status = st;
    if (rc)
        sd_log("driver: cuGetProcAddress(\"%s\", %d, %lu): not found", symbol, version,
               (unsigned long)flags);
    else if (!pfn)
        return CUDA_ERROR_INVALID_VALUE;
    return rc;
}

static CUresult gpa_v1(const char *symbol, void **pfn, int version, uint64_t flags)
{
    return gpa_v2(symbol, pfn, version, flags, NULL);
}

/* Finds a driver entry point by name, version and flags (1 legacy, 2 per-thread stream). */
API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, uint64_t flags,
                                 int *status)
{
    return gpa_v2(symbol, pfn, version, flags, status);
}

/* The CUDA 11.3 form, without the status. */
API CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, uint64_t flags)
{
    return gpa_v1(symbol, pfn, version, flags);
}
