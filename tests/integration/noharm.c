/* Cases of the "no harm" promise: each must succeed under the cache wherever it succeeds
 * without it (the suite runs every case both ways, on a 1 GiB simulated device). The cache
 * first holds some memory freed by the program, as it does in any real run.
 *   meminfo-exact  one allocation of exactly the free memory cudaMemGetInfo reports
 *   prealloc-90    one allocation of 90% of it, as JAX and TensorFlow preallocate
 *   meminfo-scattered-90  60 blocks of 7 MiB, every other one freed (the first, the third,
 *                  ...: each shares its segment or mapping with a live neighbour), then 90% of
 *                  the free memory cudaMemGetInfo reports in one allocation (JAX's and
 *                  TensorFlow's sizing after some work): the cache's free memory in holes
 *                  between live blocks is no part of what one allocation can get
 *   meminfo-after-free  a non-blocking stream writes 512 MiB, the program frees it and reads
 *                  the free memory before any synchronization: it rose by the 512 MiB, as
 *                  the plain runtime's does (the cache's block is pending, free to the program)
 *   oom-loop       allocate 64 MiB blocks until out of memory, free them all, again: the same
 *                  count every round (printed, so the suite compares it with the plain run's)
 *   scattered-free 400 blocks of 2 MiB, every other one freed, then 300 MiB in one piece: the
 *                  device has it plainly; the cache's free memory is in 2 MiB pieces between
 *                  live blocks (only expandable segments can give it back: issue "do no harm")
 *   pitch          the cache holds 60% of the device free; then a pitched allocation of that
 *                  much, which the cache does not serve (cudaMallocPitch, cuMemAllocPitch;
 *                  CUDA only: HIP's hipMallocPitch is not interposed)
 *   two-processes  a neighbour on the same device frees 60% of it into its cache, keeping one
 *                  block live; this process then asks for that much (a fork made before either
 *                  touches the device; run with CACHEALLOC_STATS=1, a private
 *                  CACHEALLOC_SHM_DIR, and SIMDEV_SHARED on the simulated device)
 *   peer           device 1 given access to device 0's memory writes and reads back a block
 *                  allocated before the access was given and one allocated after; then the
 *                  access is taken away (run with SIMDEV_DEVICES=2; with expandable segments
 *                  the cache's mapped memory must follow, as cudaMalloc memory does)
 * Prints one line per result; exits 1 when a case fails. */
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu.h"

#define MIB ((size_t)1 << 20)

/* Blocks of several sizes allocated, set and freed: the cache keeps them. */
static void warm_cache(void)
{
    void *p[24];
    for (int i = 0; i < 24; i++) {
        size_t n = (size_t)(1 + i % 6) * 3 * MIB + 4096 * (size_t)i;
        CHECK(gpuMalloc(&p[i], n));
        CHECK(gpuMemset(p[i], 0, n));
    }
    for (int i = 0; i < 24; i++)
        CHECK(gpuFree(p[i]));
}

static int one_allocation(double share)
{
    size_t fr = 0, total = 0;
    CHECK(gpuMemGetInfo(&fr, &total));
    size_t n = (size_t)((double)fr * share);
    void *p = NULL;
    gpuError_t e = gpuMalloc(&p, n);
    printf("%.0f%% of the free memory in one allocation: %s\n", share * 100,
           e == gpuSuccess ? "served" : "refused");
    if (e != gpuSuccess)
        return 1;
    CHECK(gpuMemset(p, 0x3C, n));
    unsigned char last = 0;
    CHECK(gpuMemcpy(&last, (char *)p + n - 1, 1, gpuMemcpyDefault));
    EXPECT(last == 0x3C);
    CHECK(gpuFree(p));
    (void)gpuGetLastError();
    return 0;
}

static int scattered_then_sized(void)
{
    enum { N = 60 };
    void *p[N];
    for (int i = 0; i < N; i++) {
        CHECK(gpuMalloc(&p[i], 7 * MIB));
        CHECK(gpuMemset(p[i], 0, 7 * MIB));
    }
    for (int i = 0; i < N; i += 2)
        CHECK(gpuFree(p[i]));
    int rc = one_allocation(0.9);
    for (int i = 1; i < N; i += 2)
        CHECK(gpuFree(p[i]));
    return rc;
}

static int free_rises(void)
{
    const size_t n = 512 * MIB;
    gpuStream_t s;
    CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
    void *p = NULL;
    CHECK(gpuMalloc(&p, n));
    CHECK(gpuMemsetAsync(p, 0x5A, n, s));
    size_t held = 0, freed = 0, total = 0;
    CHECK(gpuMemGetInfo(&held, &total));
    CHECK(gpuFree(p));
    CHECK(gpuMemGetInfo(&freed, &total));
    bool rose = freed >= held + n;
    printf("free memory rose by the 512 MiB freed, before any synchronization: %s\n",
           rose ? "yes" : "no");
    CHECK(gpuStreamSynchronize(s));
    CHECK(gpuStreamDestroy(s));
    return rose ? 0 : 1;
}

static int oom_loop(void)
{
    enum { MAX = 256 };
    static void *p[MAX];
    int first = -1;
    for (int round = 0; round < 3; round++) {
        int n = 0;
        while (n < MAX && gpuMalloc(&p[n], 64 * MIB) == gpuSuccess)
            n++;
        (void)gpuGetLastError();
        printf("round %d: %d blocks of 64 MiB before out of memory\n", round, n);
        for (int i = 0; i < n; i++)
            CHECK(gpuFree(p[i]));
        if (first < 0)
            first = n;
        else if (n != first)
            return 1;
    }
    return 0;
}

static int scattered_free(void)
{
    enum { N = 400 };
    static void *p[N];
    for (int i = 0; i < N; i++)
        CHECK(gpuMalloc(&p[i], 2 * MIB));
    for (int i = 0; i < N; i += 2)
        CHECK(gpuFree(p[i]));
    void *big = NULL;
    gpuError_t e = gpuMalloc(&big, 300 * MIB);
    printf("300 MiB among scattered free blocks: %s\n", e == gpuSuccess ? "served" : "refused");
    if (e == gpuSuccess)
        CHECK(gpuFree(big));
    (void)gpuGetLastError();
    for (int i = 1; i < N; i += 2)
        CHECK(gpuFree(p[i]));
    return e == gpuSuccess ? 0 : 1;
}

/* One byte at the end of p as device `dev` wrote it (v), read back by that device. */
static bool reads_back(char *p, size_t n, unsigned char v)
{
    unsigned char h = 0;
    CHECK(gpuMemcpy(&h, p + n - 1, 1, gpuMemcpyDefault));
    if (h != v) fprintf(stderr, "read %#x, wanted %#x\n", h, v);
    return h == v;
}

static int peer(void)
{
    int n = 0;
    CHECK(gpuGetDeviceCount(&n));
    if (n < 2) {
        printf("one device: nothing to check\n");
        return 0;
    }
    char *before = NULL, *after = NULL;
    CHECK(gpuSetDevice(0));
    CHECK(gpuMalloc((void **)&before, 6 * MIB));
    CHECK(gpuMemset(before, 1, 6 * MIB));
    CHECK(gpuDeviceSynchronize()); /* no work of device 0's left to race device 1's */
    CHECK(gpuSetDevice(1));
    CHECK(gpuDeviceEnablePeerAccess(0, 0));
    CHECK(gpuSetDevice(0));
    CHECK(gpuMalloc((void **)&after, 10 * MIB)); /* a growth after the access was given */
    CHECK(gpuSetDevice(1));
    CHECK(gpuMemset(before, 0x5a, 6 * MIB));
    CHECK(gpuMemset(after, 0xa5, 10 * MIB));
    CHECK(gpuDeviceSynchronize());
    bool ok = reads_back(before, 6 * MIB, 0x5a) && reads_back(after, 10 * MIB, 0xa5);
    printf("device 1 wrote and read device 0's blocks: %s\n", ok ? "yes" : "no");
    CHECK(gpuDeviceDisablePeerAccess(0));
    CHECK(gpuSetDevice(0));
    CHECK(gpuFree(before));
    CHECK(gpuFree(after));
    return ok ? 0 : 1;
}

#ifndef GPU_HIP
/* A pitched allocation of height rows of 64 KiB, through the build's API. */
static gpuError_t malloc_pitch(void **p, size_t *pitch, size_t height)
{
#ifdef GPU_DRIVER
    return GPU_DRV(cuMemAllocPitch((CUdeviceptr *)p, pitch, 64 * 1024, height, 16));
#else
    return cudaMallocPitch(p, pitch, 64 * 1024, height);
#endif
}

static int pitch(void)
{
    enum { PIECES = 6 };
    size_t fr = 0, total = 0;
    CHECK(gpuMemGetInfo(&fr, &total));
    size_t piece = (size_t)((double)fr * 0.6 / PIECES) & ~(MIB - 1);
    void *p[PIECES], *q = NULL;
    for (int i = 0; i < PIECES; i++)
        CHECK(gpuMalloc(&p[i], piece));
    for (int i = 0; i < PIECES; i++)
        CHECK(gpuFree(p[i]));
    size_t rows = piece * PIECES / (64 * 1024), row = 0;
    gpuError_t e = malloc_pitch(&q, &row, rows);
    printf("a pitched allocation of the 60%% the cache holds free: %s\n",
           e == gpuSuccess ? "served" : "refused");
    if (e != gpuSuccess)
        return 1;
    CHECK(gpuMemset(q, 0x2D, row * rows));
    CHECK(gpuFree(q));
    return 0;
}
#endif

/* The second process: waits for the size, asks for it in one piece, uses it. Exit 0: served. */
static int asker(int from)
{
    size_t n = 0;
    if (read(from, &n, sizeof n) != (ssize_t)sizeof n)
        return 2;
    void *p = NULL;
    if (gpuMalloc(&p, n) != gpuSuccess)
        return 3;
    CHECK(gpuMemset(p, 0x11, n));
    unsigned char last = 0;
    CHECK(gpuMemcpy(&last, (char *)p + n - 1, 1, gpuMemcpyDefault));
    CHECK(gpuFree(p));
    return last == 0x11 ? 0 : 4;
}

static int two_processes(void)
{
    enum { PIECES = 6 };
    const char *dir = getenv("CACHEALLOC_SHM_DIR");
    if (dir && *dir)
        mkdir(dir, 0700); /* a private place for the statistics segments; may exist */
    int go[2];
    if (pipe(go) != 0)
        return 1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0)
        _exit(asker(go[0]));
    size_t fr = 0, total = 0;
    CHECK(gpuMemGetInfo(&fr, &total));
    const size_t live_n = 16 * MIB;
    void *live = NULL, *p[PIECES];
    CHECK(gpuMalloc(&live, live_n));
    CHECK(gpuMemset(live, 0x5A, live_n));
    size_t piece = (size_t)((double)fr * 0.6 / PIECES) & ~(MIB - 1);
    for (int i = 0; i < PIECES; i++) {
        CHECK(gpuMalloc(&p[i], piece));
        CHECK(gpuMemset(p[i], 0, piece));
    }
    for (int i = 0; i < PIECES; i++)
        CHECK(gpuFree(p[i]));
    CHECK(gpuDeviceSynchronize());
    size_t n = piece * PIECES;
    int status = 0;
    if (write(go[1], &n, sizeof n) != (ssize_t)sizeof n || waitpid(pid, &status, 0) != pid)
        return 1;
    bool served = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    printf("the other process asked for the 60%% this one freed: %s\n",
           served ? "served" : "refused");
    unsigned char edge[2] = {0, 0};
    CHECK(gpuMemcpy(&edge[0], live, 1, gpuMemcpyDefault));
    CHECK(gpuMemcpy(&edge[1], (char *)live + live_n - 1, 1, gpuMemcpyDefault));
    bool kept = edge[0] == 0x5A && edge[1] == 0x5A;
    printf("this process's live block kept its contents: %s\n", kept ? "yes" : "no");
    CHECK(gpuFree(live));
    return served && kept ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "two-processes") == 0)
        return two_processes(); /* forks before the device is touched */
    warm_cache();
    if (strcmp(mode, "meminfo-exact") == 0)
        return one_allocation(1.0);
    if (strcmp(mode, "prealloc-90") == 0)
        return one_allocation(0.9);
    if (strcmp(mode, "meminfo-scattered-90") == 0)
        return scattered_then_sized();
    if (strcmp(mode, "meminfo-after-free") == 0)
        return free_rises();
    if (strcmp(mode, "oom-loop") == 0)
        return oom_loop();
    if (strcmp(mode, "scattered-free") == 0)
        return scattered_free();
    if (strcmp(mode, "peer") == 0)
        return peer();
#ifndef GPU_HIP
    if (strcmp(mode, "pitch") == 0)
        return pitch();
#endif
    fprintf(stderr, "usage: noharm meminfo-exact|prealloc-90|meminfo-scattered-90|"
                    "meminfo-after-free|oom-loop|scattered-free|peer|pitch|two-processes\n");
    return 2;
}
