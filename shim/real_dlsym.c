/* The real dlsym is found with dlvsym, which the shim does not interpose: looking "dlsym" up
 * with dlsym would find the shim's own. glibc 2.34 moved it from libdl (GLIBC_2.2.5) into libc
 * (GLIBC_2.34); both versions are the same function there. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "real_dlsym.h"
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
