/* pinned.c: page-locked host memory under the cache, in every build. The first argument names
 * the case:
 *   loop [N] N x (pin 64 MiB, free), 200 by default: under the cache the simulated driver pins
 *           once (the simulator counts); plainly N times
 *   reuse   a buffer freed right after an asynchronous copy from it was queued behind 50 ms of
 *           other work, then allocated again (the cache hands the same block back) and
 *           overwritten: the copy must have read the first contents, since the driver's free
 *           waits for the device and the cache's must too
 *   flags   for every flag set, what the driver answers about a block (flags, device pointer,
 *           memory type) after it was freed and allocated again: printed, so that the run under
 *           the cache compares with the plain one (compare.sh)
 *   bad     frees the driver refuses, printed with their codes: inside a block, twice,
 *           malloc memory
 *   limit   under CACHEALLOC_PINNED_LIMIT=8M: two live 4 MiB blocks fill it, a third pinned
 *           allocation fails with the runtime's out-of-memory code, and one freed makes room
 *           again (its cached block is reused, never counted twice)
 *   ladder  under a limit of 10 MiB pinned (SIMDEV_PINNED_LIMIT, as a container's): blocks of
 *           three flag sets freed and allocated in turn, then one whose size class would pass
 *           the limit; every call succeeds plainly, so under the cache too, which must unpin
 *           what it holds free, then pin the size asked rather than its class
 *   noctx   a block pinned in the primary context, freed once no context is current: the
 *           driver frees pinned memory by its address, with any context current or none
 *           (CUDA builds; HIP always has a current device)
 *   destroyed  blocks pinned in a created context (one freed and pinned again, one not),
 *           freed after the context was destroyed: what the driver answers (its pinned memory
 *           went with the context; the simulator keeps it), the same under the cache
 *   numba   Numba's teardown (driver API): pinned and device memory and a stream in the
 *           primary context, a copy from the pinned block queued behind 50 ms of other work,
 *           every context popped off the thread, then the frees and the release; the pinned
 *           free must still wait for the copy
 * Prints one line per result; exits 1 when a case fails. */
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "gpu.h"

#define MIB ((size_t)1 << 20)

static int loop(int n)
{
    struct simdev_counters before = sim_counters(-1);
    for (int i = 0; i < n; i++) {
        void *p = NULL;
        CHECK(gpuMallocHost(&p, 64 * MIB));
        ((volatile char *)p)[i] = 1;
        CHECK(gpuFreeHost(p));
    }
    struct simdev_counters after = sim_counters(-1);
    printf("%d pinned 64 MiB allocations: %llu pinned by the driver, %llu freed\n", n,
           (unsigned long long)(after.host_allocs - before.host_allocs),
           (unsigned long long)(after.host_frees - before.host_frees));
    const char *pre = getenv("LD_PRELOAD");
    bool cached = pre && strstr(pre, "cachealloc") && !getenv("PINNED_EXPECT_UNCACHED");
    EXPECT(after.host_allocs - before.host_allocs == (cached ? 1u : (unsigned)n));
    return 0;
}

static void sleep_50ms(void *unused)
{
    (void)unused;
    usleep(50 * 1000);
}

#ifdef GPU_HIP
/* ROCm 5.2's library exports no hipLaunchHostFunc: the stream callback does the same here. */
static void sleep_50ms_callback(hipStream_t s, hipError_t e, void *unused)
{
    (void)s, (void)e;
    sleep_50ms(unused);
}
#define queue_sleep(s) hipStreamAddCallback((s), sleep_50ms_callback, NULL, 0)
#else
#define queue_sleep(s) gpuLaunchHostFunc((s), sleep_50ms, NULL)
#endif

static int reuse(void)
{
    enum { N = 8 << 20 };
    gpuStream_t s;
    void *dev = NULL;
    unsigned char *a = NULL, *b = NULL, back[4096];
    CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
    CHECK(gpuMalloc(&dev, N));
    CHECK(gpuMallocHost((void **)&a, N));
    memset(a, 0x11, N);
    CHECK(queue_sleep(s));
    CHECK(gpuMemcpyAsync(dev, a, N, gpuMemcpyDefault, s));
    CHECK(gpuFreeHost(a)); /* the copy has not run yet: the free must wait for it */
    CHECK(gpuMallocHost((void **)&b, N));
    memset(b, 0x22, N);
    CHECK(gpuStreamSynchronize(s));
    CHECK(gpuMemcpy(back, (char *)dev + N - sizeof back, sizeof back, gpuMemcpyDefault));
    int ok = back[0] == 0x11 && back[sizeof back - 1] == 0x11;
    printf("a pinned buffer freed behind a queued copy, reallocated and overwritten: the copy "
           "read %s\n", ok ? "the first contents" : "the second");
    CHECK(gpuFreeHost(b));
    CHECK(gpuFree(dev));
    CHECK(gpuStreamDestroy(s));
    return ok ? 0 : 1;
}

#ifdef GPU_DRIVER
static gpuError_t host_alloc(void **p, size_t n, unsigned flags)
{
    gpu_drv_thread();
    return cuMemHostAlloc(p, n, flags);
}
static gpuError_t host_flags(unsigned *f, void *p)
{
    return cuMemHostGetFlags(f, p);
}
static gpuError_t device_pointer(void **d, void *p)
{
    CUdeviceptr dp = 0;
    CUresult e = cuMemHostGetDevicePointer(&dp, p, 0);
    *d = (void *)(uintptr_t)dp;
    return e;
}
#elif defined(GPU_HIP)
static gpuError_t host_alloc(void **p, size_t n, unsigned flags)
{
    return hipHostMalloc(p, n, flags);
}
static gpuError_t host_flags(unsigned *f, void *p)
{
    return hipHostGetFlags(f, p);
}
static gpuError_t device_pointer(void **d, void *p)
{
    return hipHostGetDevicePointer(d, p, 0);
}
#else
static gpuError_t host_alloc(void **p, size_t n, unsigned flags)
{
    return cudaHostAlloc(p, n, flags);
}
static gpuError_t host_flags(unsigned *f, void *p)
{
    return cudaHostGetFlags(f, p);
}
static gpuError_t device_pointer(void **d, void *p)
{
    return cudaHostGetDevicePointer(d, p, 0);
}
#endif

/* What the driver says of p and of an address inside it. */
static void describe(const char *label, char *p)
{
    for (int inner = 0; inner < 2; inner++) {
        char *at = p + (inner ? 4096 : 0);
        unsigned f = 0;
        void *d = NULL;
        gpuError_t e1 = host_flags(&f, at), e2 = device_pointer(&d, at);
        printf("%s %s: flags %d/%#x, device pointer %d/%s", label, inner ? "inside" : "start",
               (int)e1, f, (int)e2, e2 ? "-" : d == at ? "the same" : "another");
#ifdef GPU_DRIVER
        /* The range: the size asked, though the cache's block is of its size class. */
        CUdeviceptr start = 0;
        size_t size = 0;
        CUresult r1 = cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                            gpu_dptr(at));
        CUresult r2 = cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, gpu_dptr(at));
        printf(", range %d,%d/%s+%zu", (int)r1, (int)r2,
               start == gpu_dptr(p) ? "the start" : "elsewhere", size);
#elif defined(GPU_HIP)
        void *start = NULL;
        size_t size = 0;
        hipError_t r = hipMemGetAddressRange(&start, &size, at);
        printf(", range %d/%s+%zu", (int)r, start == p ? "the start" : "elsewhere", size);
#endif
        printf("\n");
    }
}

static int flags(void)
{
    static const unsigned sets[] = {0, 1, 2, 4, 7};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        char label[32];
        void *p = NULL, *q = NULL;
        CHECK(host_alloc(&p, MIB + 100, sets[i]));
        snprintf(label, sizeof label, "flags %#x, fresh", sets[i]);
        describe(label, p);
        CHECK(gpuFreeHost(p));
        CHECK(host_alloc(&q, MIB + 100, sets[i]));
        snprintf(label, sizeof label, "flags %#x, again", sets[i]);
        describe(label, q);
        CHECK(gpuFreeHost(q));
    }
    return 0;
}

static int limit(void)
{
    void *a = NULL, *b = NULL, *c = NULL;
    CHECK(gpuMallocHost(&a, 4 * MIB));
    CHECK(gpuMallocHost(&b, 4 * MIB));
    gpuError_t e = gpuMallocHost(&c, 4096);
    printf("a pinned allocation past the limit: %d\n", (int)e);
    (void)gpuGetLastError();
    EXPECT(e == gpuErrorOOM && c == NULL);
    CHECK(gpuFreeHost(b));
    CHECK(gpuMallocHost(&c, 4 * MIB)); /* the cached block, within the limit */
    EXPECT(c == b);
    CHECK(gpuFreeHost(c));
    CHECK(gpuMallocHost(&c, 2 * MIB)); /* another class: the cached 4 MiB make room */
    CHECK(gpuFreeHost(c));
    CHECK(gpuFreeHost(a));
    return 0;
}

static int ladder(void)
{
    static const struct { size_t size; unsigned flags; bool keep; } steps[] = {
        {4 * MIB, 0, false},       /* cached: 4 MiB held           */
        {4 * MIB, 1, false},       /* another flag set: 8 MiB held  */
        {4 * MIB, 4, true},        /* 12 MiB would pass: unpin all  */
        {5 * MIB, 0, true},        /* class 8 MiB passes; 5 MiB fits */
    };
    void *kept[4] = {0};
    int n = 0, failed = 0;
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        void *p = NULL;
        gpuError_t e = host_alloc(&p, steps[i].size, steps[i].flags);
        printf("pin %zu MiB, flags %#x: %d\n", steps[i].size / MIB, steps[i].flags, (int)e);
        if (e != gpuSuccess) {
            failed = 1;
            (void)gpuGetLastError();
            continue;
        }
        memset(p, (int)i, steps[i].size);
        if (steps[i].keep)
            kept[n++] = p;
        else
            CHECK(gpuFreeHost(p));
    }
    for (int i = 0; i < n; i++)
        CHECK(gpuFreeHost(kept[i]));
    return failed;
}

#ifdef GPU_DRIVER
/* The primary context of device 0, retained and pushed. */
static CUcontext push_primary(void)
{
    CUdevice d;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&d, 0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, d));
    CHECK(cuCtxPushCurrent(ctx));
    return ctx;
}

static int noctx(void)
{
    void *p = NULL;
    CUcontext popped;
    push_primary();
    CHECK(cuMemHostAlloc(&p, MIB, 0));
    CHECK(cuCtxPopCurrent(&popped));
    printf("pinned memory freed with no current context: %d\n", (int)cuMemFreeHost(p));
    CHECK(cuDevicePrimaryCtxRelease(0));
    return 0;
}

static int destroyed(void)
{
    CUdevice d;
    CUcontext ctx;
    void *a = NULL, *b = NULL, *c = NULL;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&d, 0));
    CHECK(cuCtxCreate(&ctx, NULL, 0, d));
    CHECK(cuMemHostAlloc(&a, MIB, 0));
    CHECK(cuMemFreeHost(a));
    CHECK(cuMemHostAlloc(&b, MIB, 0)); /* the cache's block a again */
    CHECK(cuMemHostAlloc(&c, 2 * MIB, 0));
    CHECK(cuCtxDestroy(ctx));
    printf("after the context was destroyed: free %d, free %d\n", (int)cuMemFreeHost(b),
           (int)cuMemFreeHost(c));
    return 0;
}

static volatile int slept;

static void sleep_50ms_then_flag(void *unused)
{
    sleep_50ms(unused);
    slept = 1;
}

static int numba(void)
{
    enum { N = 4 << 20 };
    void *h = NULL;
    CUdeviceptr dev = 0;
    CUstream s;
    CUcontext popped, current = NULL;
    push_primary();
    CHECK(cuMemHostAlloc(&h, N, 0)); /* cuda.pinned_array */
    memset(h, 0x11, N);
    CHECK(cuMemAlloc(&dev, N));
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuLaunchHostFunc(s, sleep_50ms_then_flag, NULL));
    CHECK(cuMemcpyHtoDAsync(dev, h, N, s));
    /* cuda.close(): every context off the thread, then the queued frees. */
    while (cuCtxPopCurrent(&popped) == CUDA_SUCCESS)
        ;
    CHECK(cuCtxGetCurrent(&current));
    EXPECT(current == NULL);
    CUresult e = cuMemFreeHost(h);
    printf("cuMemFreeHost with no context: %d, the queued copy %s\n", (int)e,
           slept ? "had run" : "had not run");
    printf("cuMemFree: %d\n", (int)cuMemFree(dev));
    printf("cuStreamDestroy: %d\n", (int)cuStreamDestroy(s));
    printf("cuDevicePrimaryCtxRelease: %d\n", (int)cuDevicePrimaryCtxRelease(0));
    return 0;
}
#elif !defined(GPU_HIP)
/* The runtime's program takes the context off the thread through the driver, as a library
 * beside it may; the runtime makes the primary context current again at its next call (the
 * second line shows it), so the free never reaches the driver with no context: a guard that
 * it keeps succeeding. */
static int noctx(void)
{
    void *p = NULL;
    CHECK(cudaMallocHost(&p, MIB));
    void *drv = dlopen(GPU_SIM_LIB, RTLD_NOW);
    void *set_sym = drv ? dlsym(drv, "cuCtxSetCurrent") : NULL;
    void *get_sym = drv ? dlsym(drv, "cuCtxGetCurrent") : NULL;
    EXPECT(set_sym != NULL && get_sym != NULL);
    int (*set_current)(void *), (*get_current)(void **);
    memcpy(&set_current, &set_sym, sizeof set_sym);
    memcpy(&get_current, &get_sym, sizeof get_sym);
    EXPECT(set_current(NULL) == 0);
    printf("pinned memory freed with no current context: %d\n", (int)cudaFreeHost(p));
    void *ctx = NULL;
    EXPECT(get_current(&ctx) == 0);
    printf("a context current after the free: %s\n", ctx ? "yes" : "no");
    return 0;
}
#endif

static int bad(void)
{
    char *p = NULL;
    CHECK(gpuMallocHost((void **)&p, MIB));
    printf("free inside a block: %d\n", (int)gpuFreeHost(p + 4096));
    (void)gpuGetLastError();
    void *m = malloc(4096);
    printf("free of malloc memory: %d\n", (int)gpuFreeHost(m));
    (void)gpuGetLastError();
    free(m);
    p[0] = 1; /* still the program's */
    CHECK(gpuFreeHost(p));
    printf("the block still freed once\n");
    return 0;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    if (strcmp(c, "loop") == 0)
        return loop(argc > 2 ? atoi(argv[2]) : 200);
    if (strcmp(c, "limit") == 0)
        return limit();
    if (strcmp(c, "ladder") == 0)
        return ladder();
    if (strcmp(c, "reuse") == 0)
        return reuse();
    if (strcmp(c, "flags") == 0)
        return flags();
    if (strcmp(c, "bad") == 0)
        return bad();
#ifndef GPU_HIP
    if (strcmp(c, "noctx") == 0)
        return noctx();
#endif
#ifdef GPU_DRIVER
    if (strcmp(c, "numba") == 0)
        return numba();
    if (strcmp(c, "destroyed") == 0)
        return destroyed();
#endif
    fprintf(stderr, "usage: pinned loop|limit|ladder|reuse|flags|bad|noctx|numba|destroyed\n");
    return 2;
}
