/* A probe for scripts/gpu-check.sh (a record, no verdict): whether the driver serves virtual
 * memory calls from several threads at once. Expandable segments map each growth a 2 MiB page
 * a handle, about 40 us of driver calls a page on a program's first pass (docs/arena.md,
 * "Pieces"); if threads map disjoint pages at once faster than one thread, a growth can be
 * split among threads of the cache's own.
 *
 * For 1, 2, 4 and 8 threads: each maps PAGES_EACH pages of its own reservation (create, map,
 * release each page, one access call for its run), then all unmap; the wall time of the whole
 * mapping, as pages per millisecond over all threads, the median of ROUNDS. Also the same with
 * a stream kept busy by memsets beside them, and cuMemAlloc from several threads for comparison.
 * Runs in a few seconds; maps at most 8 x 64 MiB. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probe_util.h"

#define MIB ((size_t)1 << 20)
#define PAGE (2 * MIB)
#define PAGES_EACH 32
#define ROUNDS 5
#define MAX_THREADS 8

static CUresult (*set_current)(CUcontext);
static CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
static CUresult (*addr_free)(CUdeviceptr, size_t);
static CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                          unsigned long long);
static CUresult (*release)(CUmemGenericAllocationHandle);
static CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                       unsigned long long);
static CUresult (*unmap)(CUdeviceptr, size_t);
static CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
static CUresult (*mem_alloc)(CUdeviceptr *, size_t);
static CUresult (*mem_free)(CUdeviceptr);
static CUresult (*stream_create)(CUstream *, unsigned);
static CUresult (*memset_async)(CUdeviceptr, unsigned char, size_t, CUstream);
static CUresult (*stream_sync)(CUstream);

static CUcontext ctx;
static CUdevice device;


typedef struct worker {
    pthread_t t;
    CUdeviceptr base;
    int vmm;      /* 1: map pages; 0: cuMemAlloc as many pages' worth, one by one */
    int failed;
    pthread_barrier_t *go;
    CUdeviceptr plain[PAGES_EACH];
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    set_current(ctx);
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device;
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = device;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    pthread_barrier_wait(w->go);
    for (int i = 0; i < PAGES_EACH; i++) {
        if (!w->vmm) {
            w->failed |= mem_alloc(&w->plain[i], PAGE) != CUDA_SUCCESS;
            continue;
        }
        CUmemGenericAllocationHandle h;
        if (create(&h, PAGE, &prop, 0) != CUDA_SUCCESS) {
            w->failed = 1;
            break;
        }
        w->failed |= map(w->base + (size_t)i * PAGE, PAGE, 0, h, 0) != CUDA_SUCCESS;
        release(h);
    }
    if (w->vmm)
        w->failed |= set_access(w->base, PAGES_EACH * PAGE, &acc, 1) != CUDA_SUCCESS;
    pthread_barrier_wait(w->go);
    return NULL;
}

/* Pages (or cuMemAlloc blocks of a page) per millisecond over n threads at once. */
static double rate(int n, int vmm)
{
    worker w[MAX_THREADS];
    double v[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        pthread_barrier_t go;
        pthread_barrier_init(&go, NULL, (unsigned)n + 1);
        for (int i = 0; i < n; i++) {
            memset(&w[i], 0, sizeof w[i]);
            w[i].vmm = vmm;
            w[i].go = &go;
            if (vmm && reserve(&w[i].base, PAGES_EACH * PAGE, 0, 0, 0) != CUDA_SUCCESS)
                return -1;
            pthread_create(&w[i].t, NULL, work, &w[i]);
        }
        pthread_barrier_wait(&go);
        double t0 = now_us();
        pthread_barrier_wait(&go);
        double t1 = now_us();
        int failed = 0;
        for (int i = 0; i < n; i++) {
            pthread_join(w[i].t, NULL);
            failed |= w[i].failed;
            if (vmm) {
                unmap(w[i].base, PAGES_EACH * PAGE);
                addr_free(w[i].base, PAGES_EACH * PAGE);
            } else {
                for (int k = 0; k < PAGES_EACH; k++)
                    if (w[i].plain[k])
                        mem_free(w[i].plain[k]);
            }
        }
        pthread_barrier_destroy(&go);
        if (failed)
            return -1;
        v[r] = (double)(n * PAGES_EACH) / ((t1 - t0) / 1000.0);
    }
    return median(v, ROUNDS);
}

int main(void)
{
    void *lib = probe_open(&device, &ctx);
    LOAD(set_current, "cuCtxSetCurrent");
    LOAD(reserve, "cuMemAddressReserve");
    LOAD(addr_free, "cuMemAddressFree");
    LOAD(create, "cuMemCreate");
    LOAD(release, "cuMemRelease");
    LOAD(map, "cuMemMap");
    LOAD(unmap, "cuMemUnmap");
    LOAD(set_access, "cuMemSetAccess");
    LOAD(mem_alloc, "cuMemAlloc_v2");
    LOAD(mem_free, "cuMemFree_v2");
    LOAD(stream_create, "cuStreamCreate");
    LOAD(memset_async, "cuMemsetD8Async");
    LOAD(stream_sync, "cuStreamSynchronize");
    static const int counts[] = {1, 2, 4, 8};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        printf("pages_per_ms.threads%d=%.1f\n", counts[i], rate(counts[i], 1));
    for (size_t i = 0; i < 3; i++)
        printf("cumemalloc_per_ms.threads%d=%.1f\n", counts[i], rate(counts[i], 0));
    /* Beside a stream the device is kept busy on: 64 MiB memsets queued all along, about
     * 100 ms of them (a GPU's take microseconds each, the simulator's milliseconds). */
    CUstream s;
    CUdeviceptr buf;
    if (stream_create(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS &&
        mem_alloc(&buf, 64 * MIB) == CUDA_SUCCESS) {
        double t0 = now_us();
        memset_async(buf, 0, 64 * MIB, s);
        stream_sync(s);
        double one = now_us() - t0;
        int n = one > 0 && 100000.0 / one < 2000 ? (int)(100000.0 / one) + 1 : 2000;
        for (int k = 0; k < n; k++)
            memset_async(buf, (unsigned char)k, 64 * MIB, s);
        printf("busy.pages_per_ms.threads1=%.1f\n", rate(1, 1));
        printf("busy.pages_per_ms.threads4=%.1f\n", rate(4, 1));
        stream_sync(s);
        mem_free(buf);
    }
    return 0;
}
