/* dlsym(RTLD_NEXT, ...) from the program itself resolves relative to the program under the
 * shim's dlsym hook, exactly as without it. The shim defines dlopen and comes right after the
 * executable in the global scope, so the program's "next" dlopen is the shim's own; a hook that
 * resolved RTLD_NEXT relative to itself would answer the C library's instead. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    void *next = dlsym(RTLD_NEXT, "dlopen");
    Dl_info info;
    if (next == NULL || !dladdr(next, &info) || info.dli_fname == NULL) {
        fprintf(stderr, "dlsym(RTLD_NEXT, \"dlopen\") found nothing\n");
        return 1;
    }
    int preloaded = dlsym(RTLD_DEFAULT, "cachealloc_get_stats_v1") != NULL;
    int in_shim = strstr(info.dli_fname, "libcachealloc") != NULL;
    printf("next dlopen after the program: %s\n", info.dli_fname);
    return preloaded != in_shim;
}
