/* Real-function lookup: dlsym(RTLD_NEXT) first; for a runtime loaded RTLD_LOCAL (Python
 * extension modules, plugins) RTLD_NEXT sees nothing, so find the loaded library by its file
 * name and ask it directly. */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "real.h"

struct find_ctx {
    const char *prefix;
    char path[4096];
};

static int find_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct find_ctx *f = data;
    const char *name = info->dlpi_name;
    if (name == NULL || name[0] == '\0')
        return 0;
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, f->prefix, strlen(f->prefix)) != 0)
        return 0;
    size_t n = strlen(name);
    if (n >= sizeof f->path)
        return 0;
    memcpy(f->path, name, n + 1);
    return 1;
}

void *ca_real_symbol(const char *lib_prefix, const char *name)
{
    void *p = dlsym(RTLD_NEXT, name);
    if (p != NULL)
        return p;
    struct find_ctx f = {.prefix = lib_prefix};
    if (!dl_iterate_phdr(find_loaded, &f))
        return NULL;
    /* RTLD_NOLOAD: a reference to the copy already in memory, never a second load. */
    void *h = dlopen(f.path, RTLD_NOLOAD | RTLD_LAZY);
    if (h == NULL)
        return NULL;
    p = dlsym(h, name);
    dlclose(h);
    return p;
}

int ca_real_resolve(ca_runtime *rt)
{
    int missing = 0;
    for (const ca_rt_sym *s = rt->syms; s->name != NULL; s++) {
        void *p = ca_real_symbol(rt->lib_prefix, s->name);
        if (p == NULL && s->required)
            missing = 1;
        /* dlsym hands out data pointers; POSIX guarantees they convert to function pointers.
         * memcpy says so without a cast ISO C frowns upon. */
        memcpy((char *)&rt->fn + s->offset, &p, sizeof p);
    }
    return missing ? -1 : 0;
}
