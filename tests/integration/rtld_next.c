/* dlsym(RTLD_NEXT, ...) from the program itself resolves relative to the program under the
 * shim's dlsym hook, exactly as without it: the answer must be the dlopen of the first object
 * after the executable, in load order, that defines one (the shim, or a sanitizer runtime
 * preloaded before it). A hook that resolved RTLD_NEXT relative to itself would answer the
 * dlopen of an object after the shim (the C library's) instead. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

struct first {
    int seen_exe;
    char name[4096];
};

/* The first loaded object after the executable whose own symbol table defines dlopen. */
static int find(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct first *f = data;
    if (!f->seen_exe) {
        f->seen_exe = 1; /* the executable comes first */
        return 0;
    }
    void *h = dlopen(info->dlpi_name, RTLD_NOLOAD | RTLD_LAZY);
    void *p = h ? dlsym(h, "dlopen") : NULL;
    Dl_info di;
    int own = p && dladdr(p, &di) && di.dli_fbase == (void *)info->dlpi_addr;
    if (h)
        dlclose(h);
    if (own)
        snprintf(f->name, sizeof f->name, "%s", info->dlpi_name);
    return own;
}

int main(void)
{
    void *next = dlsym(RTLD_NEXT, "dlopen");
    Dl_info info;
    if (next == NULL || !dladdr(next, &info) || info.dli_fname == NULL) {
        fprintf(stderr, "dlsym(RTLD_NEXT, \"dlopen\") found nothing\n");
        return 1;
    }
    struct first f = {0, ""};
    dl_iterate_phdr(find, &f);
    printf("next dlopen after the program: %s (expected %s)\n", info.dli_fname, f.name);
    return strcmp(info.dli_fname, f.name) != 0;
}
