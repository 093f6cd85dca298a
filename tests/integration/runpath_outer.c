/* A library whose RUNPATH ($ORIGIN/runpath_sub) is the only way to find the library it loads by
 * bare name: glibc takes the caller of dlopen from the return address, so this only works when
 * an interposed dlopen passes the call on as a tail call. */
#include <dlfcn.h>
#include <stddef.h>

int ca_runpath_outer_load(void);

/* 1 when the inner library loads through this library's RUNPATH. */
int ca_runpath_outer_load(void)
{
    void *h = dlopen("libca_runpath_inner.so", RTLD_NOW | RTLD_LOCAL);
    return h != NULL;
}
