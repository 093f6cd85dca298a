/* Detecting a program that carries the static CUDA runtime (nvcc's default). Such a program
 * never calls cudaMalloc through the dynamic linker, so the shim would cache nothing without a
 * word. Its runtime loads the driver with dlopen("libcuda.so.1") from its own code: the shim
 * interposes dlopen, and when the driver is loaded by an object that is not libcudart.so and
 * whose file carries the static runtime's own error strings, says so in one line.
 *
 * glibc resolves a relative name with the RUNPATH of the caller it finds from its return
 * address, so the wrapper must leave the caller's return address in place: it ends in a tail
 * call (a jump) to the real dlopen. The look at the name is all a process that never loads
 * the driver pays (bash, ls, a CPU-only Python). */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "init.h"
#include "runtime.h"

typedef void *(*dlopen_fn)(const char *, int);

/* Present in every build of libcudart_static.a (its error-string table) and in no program
 * that merely calls the runtime. */
static const char static_marker[] = "CUDA driver version is insufficient for CUDA runtime version";

static _Atomic(dlopen_fn) real_dlopen;
static atomic_int warned;

/* Objects already looked at that get no line: their file is not mapped and scanned again at
 * the next dlopen of the driver. Lock-free (a dlopen may come from any thread, or from a
 * forked child); entries are never removed, and when the table is full objects are looked at
 * again, which is only slower. */
#define SILENT_MAX 32
static char *_Atomic silent[SILENT_MAX];

static int is_silent(const char *path)
{
    for (int i = 0; i < SILENT_MAX; i++) {
        const char *p = atomic_load_explicit(&silent[i], memory_order_acquire);
        if (p == NULL)
            return 0;
        if (strcmp(p, path) == 0)
            return 1;
    }
    return 0;
}

static void remember_silent(const char *path)
{
    char *copy = strdup(path);
    if (copy == NULL)
        return;
    for (int i = 0; i < SILENT_MAX; i++) {
        char *expected = NULL;
        if (atomic_compare_exchange_strong(&silent[i], &expected, copy))
            return;
        if (strcmp(expected, path) == 0)
            break; /* another thread remembered it first */
    }
    free(copy);
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* 1 when the file at path contains the static runtime's marker. */
static int file_has_marker(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct stat st;
    int found = 0;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            found = memmem(m, (size_t)st.st_size, static_marker, sizeof static_marker - 1) != NULL;
            munmap(m, (size_t)st.st_size);
        }
    }
    close(fd);
    return found;
}

static __attribute__((noinline)) void check_driver_load(const void *caller)
{
    if (atomic_load_explicit(&warned, memory_order_relaxed))
        return;
    Dl_info info;
    struct link_map *lm = NULL;
    if (dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) == 0 || lm == NULL)
        return;
    int is_main = lm->l_prev == NULL; /* the executable heads the link-map list */
    /* A sanitizer runtime preloaded before the shim interposes dlopen too, and then is the
     * caller we see: the program's own code is the best guess. */
    const char *cb = lm->l_name ? base_name(lm->l_name) : "";
    if (starts_with(cb, "libasan.so") || starts_with(cb, "libtsan.so") ||
        starts_with(cb, "libclang_rt."))
        is_main = 1;
    const char *path = is_main ? "/proc/self/exe" : lm->l_name;
    if (path == NULL || path[0] == '\0' || starts_with(base_name(path), "libcudart.so"))
        return;
    if (is_silent(path))
        return;
    /* A shared library with its own static runtime (NVIDIA's math libraries) only matters to
     * those who ask; a program built with nvcc's default is what users trip over. */
    const ca_options *o = ca_shim_options();
    if (!file_has_marker(path) || (!is_main && !(o != NULL && o->verbose))) {
        remember_silent(path);
        return;
    }
    if (atomic_exchange(&warned, 1))
        return;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    if (is_main)
        fprintf(stderr, "cachealloc: %s is linked with the static CUDA runtime: its allocations "
                        "cannot be cached; rebuild it with `nvcc -cudart shared`\n",
                n > 0 ? base_name(exe) : "this program");
    else
        fprintf(stderr, "cachealloc: %s (in %s) carries its own static CUDA runtime: its "
                        "allocations cannot be cached\n",
                base_name(lm->l_name), n > 0 ? base_name(exe) : "this program");
}

static int is_driver_name(const char *file)
{
    return file != NULL && starts_with(base_name(file), "libcuda.so");
}

static __attribute__((noinline)) dlopen_fn resolve_dlopen(void)
{
    dlopen_fn f;
    void *p = dlsym(RTLD_NEXT, "dlopen");
    memcpy(&f, &p, sizeof f);
    atomic_store_explicit(&real_dlopen, f, memory_order_release);
    return f;
}

/* Interposed: loads like the real dlopen (same caller, so the caller's RUNPATH applies). */
CA_EXPORT void *dlopen(const char *file, int mode)
{
    if (is_driver_name(file))
        check_driver_load(__builtin_return_address(0));
    atomic_fetch_add_explicit(&ca_dlopen_gen, 1, memory_order_release);
    dlopen_fn f = atomic_load_explicit(&real_dlopen, memory_order_acquire);
    if (f == NULL)
        f = resolve_dlopen();
    return f(file, mode);
}
