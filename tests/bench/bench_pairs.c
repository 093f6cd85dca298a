/* Cache-hit allocate+free pairs through the whole stack a program uses: NVIDIA's runtime (the
 * static or the shared one) or the driver API, the shim's door, the arena, on the simulated
 * driver. One size, warm cache; each thread on the default stream (plain API) or on its own
 * non-blocking stream (stream-ordered API). Prints key=value lines; exits 1 on a failed call.
 *
 *   bench-pairs-{static,shared,driver,cub} [--api plain|async] [--threads T] [--pairs N]
 *
 * Instruction counts come from callgrind with N and 2N pairs (scripts/bench.sh): the
 * difference divided by N is one pair, in total and per object (callgrind_objects.py). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef PAIRS_DRIVER
#include <cuda.h>
typedef CUstream stream_t;
static CUcontext ctx;
static int init(void)
{
    CUdevice dev;
    return cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
           cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS || cuCtxSetCurrent(ctx) != CUDA_SUCCESS;
}
static int thread_init(void) { return cuCtxSetCurrent(ctx) != CUDA_SUCCESS; }
static int stream_new(stream_t *s) { return cuStreamCreate(s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS; }
static int pair_plain(size_t n)
{
    CUdeviceptr p;
    return cuMemAlloc(&p, n) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS;
}
static int pair_async(size_t n, stream_t s)
{
    CUdeviceptr p;
    return cuMemAllocAsync(&p, n, s) != CUDA_SUCCESS || cuMemFreeAsync(p, s) != CUDA_SUCCESS;
}
#elif defined(PAIRS_CUB)
/* CUB's CachingDeviceAllocator in place of the runtime's allocator (bench_pairs_cub.cpp): the
 * same loops, run without the shim, for comparison. */
typedef void *stream_t;
int cub_pairs_init(void);
int cub_pairs_stream_new(stream_t *s);
int cub_pairs_plain(size_t n);
int cub_pairs_async(size_t n, stream_t s);
static int init(void) { return cub_pairs_init(); }
static int thread_init(void) { return 0; }
static int stream_new(stream_t *s) { return cub_pairs_stream_new(s); }
static int pair_plain(size_t n) { return cub_pairs_plain(n); }
static int pair_async(size_t n, stream_t s) { return cub_pairs_async(n, s); }
#else
#include <cuda_runtime_api.h>
typedef cudaStream_t stream_t;
static int init(void) { return cudaFree(NULL) != cudaSuccess; }
static int thread_init(void) { return cudaSetDevice(0) != cudaSuccess; }
static int stream_new(stream_t *s) { return cudaStreamCreateWithFlags(s, cudaStreamNonBlocking) != cudaSuccess; }
static int pair_plain(size_t n)
{
    void *p;
    return cudaMalloc(&p, n) != cudaSuccess || cudaFree(p) != cudaSuccess;
}
static int pair_async(size_t n, stream_t s)
{
    void *p;
    return cudaMallocAsync(&p, n, s) != cudaSuccess || cudaFreeAsync(p, s) != cudaSuccess;
}
#endif

#define SIZE ((size_t)1 << 20)
#define MAX_THREADS 64

static int async_api, nthreads = 1;
static long pairs = 100000;
static pthread_barrier_t go;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
    long *failures = arg;
    stream_t s = 0;
    if (thread_init() || (async_api && stream_new(&s)))
        (*failures)++;
    /* Warm: the first pair may reach the driver. */
    if (async_api ? pair_async(SIZE, s) : pair_plain(SIZE))
        (*failures)++;
    pthread_barrier_wait(&go);
    for (long i = 0; i < pairs; i++)
        if (async_api ? pair_async(SIZE, s) : pair_plain(SIZE))
            (*failures)++;
    return NULL;
}

int main(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--api") == 0)
            async_api = strcmp(argv[i + 1], "async") == 0;
        else if (strcmp(argv[i], "--threads") == 0)
            nthreads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--pairs") == 0)
            pairs = atol(argv[i + 1]);
        else {
            fprintf(stderr, "usage: %s [--api plain|async] [--threads T] [--pairs N]\n", argv[0]);
            return 2;
        }
    }
    if (nthreads < 1 || nthreads > MAX_THREADS || pairs < 1 || init()) {
        fprintf(stderr, "bench-pairs: bad arguments, or no device\n");
        return 2;
    }
    pthread_t t[MAX_THREADS];
    long failures[MAX_THREADS] = {0};
    pthread_barrier_init(&go, NULL, (unsigned)nthreads + 1);
    for (int i = 0; i < nthreads; i++)
        pthread_create(&t[i], NULL, worker, &failures[i]);
    pthread_barrier_wait(&go);
    double t0 = now_s();
    long bad = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(t[i], NULL);
        bad += failures[i];
    }
    double wall = now_s() - t0;
    printf("api=%s\nthreads=%d\npairs=%ld\nwall_s=%.6f\npairs_per_s=%.0f\nfailures=%ld\n",
           async_api ? "async" : "plain", nthreads, pairs * nthreads, wall,
           (double)pairs * nthreads / wall, bad);
    return bad ? 1 : 0;
}
