/* Loads libca_runpath_outer.so (path in argv[1]) and has it dlopen a library by bare name. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW);
    if (h == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    int (*load)(void);
    void *sym = dlsym(h, "ca_runpath_outer_load");
    if (sym == NULL)
        return 1;
    memcpy(&load, &sym, sizeof load);
    if (!load()) {
        fprintf(stderr, "the library's RUNPATH was not used: %s\n", dlerror());
        return 1;
    }
    return 0;
}
