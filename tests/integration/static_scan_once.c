/* A shared library with its own static runtime loads the driver three times. Without
 * CACHEALLOC_VERBOSE the shim prints nothing for it, and looks into its file once: this
 * program's own open(), which the shim's call binds to, counts the opens of the library's file.
 * (With a sanitizer runtime preloaded, the sanitizer's dlopen is the caller the shim sees, and
 * the shim looks into the executable instead: opens of /proc/self/exe count too.)
 * argv[1]: the library (marker_lib.c). */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define EXPECT(cond)                                                                          \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);               \
            return 1;                                                                         \
        }                                                                                     \
    } while (0)

static const char *lib_path;
static int lib_opens;

typedef int (*open_fn)(const char *, int, ...);

/* Exported (-rdynamic): the shim's calls to open bind here first. */
int open(const char *path, int flags, ...)
{
    static open_fn next;
    if (next == NULL) {
        void *p = dlsym(RTLD_NEXT, "open");
        memcpy(&next, &p, sizeof next);
    }
    if (lib_path != NULL && (strcmp(path, lib_path) == 0 || strcmp(path, "/proc/self/exe") == 0))
        lib_opens++;
    unsigned mode = 0;
    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, unsigned);
        va_end(ap);
    }
    return next(path, flags, mode);
}

int main(int argc, char **argv)
{
    EXPECT(argc > 1);
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void *sym = dlsym(h, "ca_marker_load_driver");
    EXPECT(sym != NULL);
    void *(*load)(void);
    memcpy(&load, &sym, sizeof sym);
    /* The shim knows the library by the name the loader gave it. */
    struct link_map *lm = NULL;
    EXPECT(dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm != NULL);
    lib_path = lm->l_name;
    for (int i = 0; i < 3; i++)
        (void)load();
    printf("the caller's file was opened %d times for 3 loads of the driver\n", lib_opens);
    return lib_opens == 1 ? 0 : 1;
}
