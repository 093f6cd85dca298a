/* A probe for scripts/gpu-check.sh (a record, no verdict): which context is current in a new
 * thread whose first runtime call is cudaMallocAsync on another thread's stream, before and
 * after the call, and, under the cache, whether the cache served it (its exit summary). On the
 * H100 of 2026-11-26 there was none, and the cache passed the calls to the driver; the
 * simulated driver makes the primary context current there (docs/gpu.md). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static cudaStream_t stream;
static CUresult (*get_current)(CUcontext *);

static void show(const char *when)
{
    CUcontext c = NULL;
    CUresult r = get_current(&c);
    printf("%s: cuCtxGetCurrent -> %d, %s\n", when, (int)r, c ? "a context" : "none");
}

static void *worker(void *unused)
{
    (void)unused;
    show("worker, first");
    void *p = NULL;
    cudaError_t e = cudaMallocAsync(&p, 1 << 20, stream);
    show("worker, after cudaMallocAsync");
    printf("worker cudaMallocAsync -> %d\n", (int)e);
    if (e == cudaSuccess)
        cudaFreeAsync(p, stream);
    return NULL;
}

int main(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    void *sym = lib ? dlsym(lib, "cuCtxGetCurrent") : NULL;
    if (sym == NULL || cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "thread_ctx: no driver or no device\n");
        return 1;
    }
    memcpy(&get_current, &sym, sizeof get_current);
    show("main");
    pthread_t t;
    if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0)
        return 1;
    return cudaStreamSynchronize(stream) == cudaSuccess ? 0 : 1;
}
