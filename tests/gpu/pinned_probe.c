/* A probe for scripts/gpu-check.sh (a record, no verdict): how the driver treats page-locked
 * host memory, the facts a cache of it must reproduce (issue "pinned host memory"): what
 * cuMemHostAlloc and cuMemFreeHost cost by size, what a block of each flag combination answers
 * to cuMemHostGetFlags, cuMemHostGetDevicePointer and cuPointerGetAttribute (at its start and
 * inside it), whether cuMemFreeHost waits for work queued on a stream, and the codes of bad
 * frees. No cache loaded. Prints key=value lines; runs in about two seconds. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "probe_util.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define ROUNDS 5

static CUresult (*host_alloc)(void **, size_t, unsigned);
static CUresult (*alloc_host)(void **, size_t);
static CUresult (*free_host)(void *);
static CUresult (*get_flags)(unsigned *, void *);
static CUresult (*get_dptr)(CUdeviceptr *, void *, unsigned);
static CUresult (*ptr_attr)(void *, CUpointer_attribute, CUdeviceptr);
static CUresult (*stream_create)(CUstream *, unsigned);
static CUresult (*host_fn)(CUstream, CUhostFn, void *);
static CUresult (*stream_sync)(CUstream);
static CUresult (*mem_alloc)(CUdeviceptr *, size_t);
static CUresult (*mem_free)(CUdeviceptr);

#undef LOAD
#undef LOAD_OPTIONAL
#define LOAD(var, name)                                                                       \
    do {                                                                                      \
        void *p_ = dlsym(lib, name);                                                          \
        if (p_ == NULL) {                                                                     \
            printf("missing=%s\n", name);                                                     \
            return 1;                                                                         \
        }                                                                                     \
        memcpy(&var, &p_, sizeof var);                                                        \
    } while (0)

/* An entry point a driver may lack (the simulated one has no cuMemHostGetFlags yet). */
#define LOAD_OPTIONAL(var, name)                                                              \
    do {                                                                                      \
        void *p_ = dlsym(lib, name);                                                          \
        if (p_ == NULL)                                                                       \
            printf("missing=%s\n", name);                                                    \
        memcpy(&var, &p_, sizeof var);                                                        \
    } while (0)

/* cuMemHostAlloc and cuMemFreeHost of n bytes, each page written between them. */
static void cost(size_t n)
{
    double a[ROUNDS], f[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        void *p = NULL;
        double t0 = now_us();
        CUresult e = host_alloc(&p, n, 0);
        double t1 = now_us();
        if (e != CUDA_SUCCESS) {
            printf("host_alloc.%zuKiB=%d\n", n / KIB, (int)e);
            return;
        }
        memset(p, 1, n);
        double t2 = now_us();
        free_host(p);
        f[r] = now_us() - t2;
        a[r] = t1 - t0;
    }
    printf("host_alloc_us.%zuKiB=%.1f free_host_us.%zuKiB=%.1f\n", n / KIB, median(a, ROUNDS),
           n / KIB, median(f, ROUNDS));
}

/* What a block of these flags answers, at its start and 4 KiB inside. */
static void answers(const char *label, unsigned flags, int portable_form)
{
    void *p = NULL;
    CUresult e = portable_form ? alloc_host(&p, MIB) : host_alloc(&p, MIB, flags);
    printf("%s.alloc=%d", label, (int)e);
    if (e != CUDA_SUCCESS) {
        printf("\n");
        return;
    }
    for (int inner = 0; inner < 2; inner++) {
        char *at = (char *)p + (inner ? 4 * KIB : 0);
        const char *where = inner ? "inner" : "start";
        unsigned got = 0;
        e = get_flags ? get_flags(&got, at) : CUDA_ERROR_NOT_FOUND;
        printf(" %s.get_flags=%d/%#x", where, (int)e, got);
        CUdeviceptr d = 0;
        e = get_dptr(&d, at, 0);
        printf(" %s.dptr=%d/%s", where, (int)e,
               e ? "-" : d == (CUdeviceptr)(uintptr_t)at ? "same" : "other");
        unsigned type = 0;
        e = ptr_attr(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)at);
        printf(" %s.type=%d/%u", where, (int)e, type);
        CUdeviceptr start = 0;
        size_t size = 0;
        CUresult e1 = ptr_attr(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                               (CUdeviceptr)(uintptr_t)at);
        CUresult e2 = ptr_attr(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, (CUdeviceptr)(uintptr_t)at);
        printf(" %s.range=%d,%d/%lld+%zu", where, (int)e1, (int)e2,
               (long long)(start - (CUdeviceptr)(uintptr_t)p), size);
        int mapped = -1;
        e = ptr_attr(&mapped, CU_POINTER_ATTRIBUTE_MAPPED, (CUdeviceptr)(uintptr_t)at);
        printf(" %s.mapped=%d/%d", where, (int)e, mapped);
    }
    printf(" free_inner=%d", (int)free_host((char *)p + 4 * KIB));
    printf(" free=%d\n", (int)free_host(p));
}

static void CUDA_CB sleep_200ms(void *unused)
{
    (void)unused;
    usleep(200000);
}

/* Whether cuMemFreeHost (and cuMemFree, for comparison) returns before a host function of
 * 200 ms queued on a stream has run. */
static void waits(void)
{
    CUstream s;
    if (stream_create(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
        return;
    void *p = NULL;
    host_alloc(&p, MIB, 0);
    host_fn(s, sleep_200ms, NULL);
    double t0 = now_us();
    CUresult e = free_host(p);
    printf("free_host_beside_busy_stream=%d ms=%.1f\n", (int)e, (now_us() - t0) / 1e3);
    stream_sync(s);
    CUdeviceptr d = 0;
    mem_alloc(&d, MIB);
    host_fn(s, sleep_200ms, NULL);
    t0 = now_us();
    e = mem_free(d);
    printf("mem_free_beside_busy_stream=%d ms=%.1f\n", (int)e, (now_us() - t0) / 1e3);
    stream_sync(s);
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    void *lib = probe_open(&dev, &ctx);
    LOAD(host_alloc, "cuMemHostAlloc");
    LOAD(alloc_host, "cuMemAllocHost_v2");
    LOAD(free_host, "cuMemFreeHost");
    LOAD_OPTIONAL(get_flags, "cuMemHostGetFlags");
    LOAD(get_dptr, "cuMemHostGetDevicePointer_v2");
    LOAD(ptr_attr, "cuPointerGetAttribute");
    LOAD(stream_create, "cuStreamCreate");
    LOAD(host_fn, "cuLaunchHostFunc");
    LOAD(stream_sync, "cuStreamSynchronize");
    LOAD(mem_alloc, "cuMemAlloc_v2");
    LOAD(mem_free, "cuMemFree_v2");
    struct rlimit lim;
    if (getrlimit(RLIMIT_MEMLOCK, &lim) == 0)
        printf("memlock_limit=%lld\n", lim.rlim_cur == RLIM_INFINITY ? -1LL
                                                                     : (long long)lim.rlim_cur);
    static const size_t sizes[] = {64 * KIB, MIB, 8 * MIB, 64 * MIB, 256 * MIB};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        cost(sizes[i]);
    answers("flags0", 0, 0);
    answers("portable", CU_MEMHOSTALLOC_PORTABLE, 0);
    answers("devicemap", CU_MEMHOSTALLOC_DEVICEMAP, 0);
    answers("writecombined", CU_MEMHOSTALLOC_WRITECOMBINED, 0);
    answers("all3", CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                        CU_MEMHOSTALLOC_WRITECOMBINED, 0);
    answers("alloc_host", 0, 1);
    void *m = malloc(4096);
    printf("free_host.malloced=%d\n", (int)free_host(m));
    free(m);
    CUdeviceptr d = 0;
    mem_alloc(&d, MIB);
    printf("free_host.device=%d\n", (int)free_host((void *)(uintptr_t)d));
    mem_free(d);
    waits();
    return 0;
}
