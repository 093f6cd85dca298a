/* The dynamic loader's functions as the shim meets them, below everything else: the real
 * dlsym, and the interposed dlopen with its count of the program's loads. (The interposed dlsym
 * is cuda/dlsym_hook.c, at the very top: it answers with the doors' entry points.)
 *
 * The real dlsym is found with dlvsym, which the shim does not interpose: looking "dlsym" up
 * with dlsym would find the shim's own. glibc 2.34 moved it from libdl (GLIBC_2.2.5) into libc
 * (GLIBC_2.34); both versions are the same function there.
 *
 * dlopen is counted because a newly loaded object may be built for per-thread default streams
 * (ptsz_scan.c). glibc resolves a relative name with the RUNPATH of the caller it finds from
 * its return address, so the wrapper must leave the caller's return address in place: it ends
 * in a tail call (a jump) to the real dlopen. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "lane.h"
#include "loader.h"
#include "runtime.h"

static _Atomic(ca_dlsym_fn) real;

CA_BEFORE_SANITIZERS ca_dlsym_fn ca_real_dlsym(void)
{
    ca_dlsym_fn f = atomic_load_explicit(&real, memory_order_acquire);
    if (f != NULL)
        return f;
    void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (p == NULL)
        p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    memcpy(&f, &p, sizeof f);
    atomic_store_explicit(&real, f, memory_order_release);
    return f;
}

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
