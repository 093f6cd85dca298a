/* The interposed dlsym: how every copy of the CUDA runtime (shared, or static inside the
 * program or a library) and every driver-API program that loads libcuda.so.1 by hand finds the
 * driver. A lookup of one of the driver entry points the cache serves, on a handle, is answered
 * with the shim's wrapper (door.c); everything else goes to the real dlsym by a tail
 * call, so that the caller's return address, by which glibc resolves RTLD_NEXT, is the
 * caller's own and nothing resolves differently. */
#include <dlfcn.h>

#include "door.h"
#include "loader.h"
#include "runtime.h"
#include "served.h"

/* Interposed: the real dlsym, except for the served driver names looked up on a handle. */
CA_EXPORT CA_BEFORE_SANITIZERS void *dlsym(void *handle, const char *name)
{
    /* The pseudo-handles depend on the caller, and a program asking them for a driver name
     * finds the shim's exported entry points anyway. */
    if (name[0] == 'c' && name[1] == 'u' && handle != RTLD_NEXT &&
        handle != RTLD_DEFAULT) {
        int i = ca_drv_served_index(name);
        if (i >= 0)
            return ca_drv_served_dlsym(i, handle, name);
    }
    return ca_real_dlsym()(handle, name);
}
