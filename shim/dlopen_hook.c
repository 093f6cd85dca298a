/* The interposed dlopen: counts the program's loads, since a newly loaded object may be built
 * for per-thread default streams (ptsz_scan.c). glibc resolves a relative name with the
 * RUNPATH of the caller it finds from its return address, so the wrapper must leave the
 * caller's return address in place: it ends in a tail call (a jump) to the real dlopen. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "dlopen_hook.h"
#include "lane.h"
#include "real_dlsym.h"
#include "runtime.h"

typedef void *(*dlopen_fn)(const char *, int);

atomic_uint ca_dlopen_gen;

static _Atomic(dlopen_fn) real_dlopen;

static CA_NOINLINE dlopen_fn resolve_dlopen(void)
{
    dlopen_fn f;
    void *p = ca_real_dlsym()(RTLD_NEXT, "dlopen");
    memcpy(&f, &p, sizeof f);
    atomic_store_explicit(&real_dlopen, f, memory_order_release);
    return f;
}

/* Interposed: loads like the real dlopen (same caller, so the caller's RUNPATH applies). */
CA_EXPORT void *dlopen(const char *file, int mode)
{
    if (!(mode & RTLD_NOLOAD)) { /* which loads nothing */
        atomic_fetch_add_explicit(&ca_dlopen_gen, 1, memory_order_release);
        ca_lane_invalidate(); /* the next allocation scans the loaded objects again */
    }
    dlopen_fn f = atomic_load_explicit(&real_dlopen, memory_order_acquire);
    if (f == NULL)
        f = resolve_dlopen();
    return f(file, mode);
}
