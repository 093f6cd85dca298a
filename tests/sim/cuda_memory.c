/* cuda_memory.c: allocation rules, data round trips, bad frees, out of memory, cudaFree's
 * device synchronization, multiple devices, pointer attributes and the ABI layouts.
 * Run with SIMDEV_DEVICES=2 SIMDEV_MEMORY=64M. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stddef.h>

#include "check.h"

#define MiB (1024 * 1024)

static void gate_fn(void *g) { gate_wait(g); }

static void test_abi(void)
{
    CHECK_EQ(sizeof(struct cudaPointerAttributes), 88);
    CHECK_EQ(offsetof(struct cudaPointerAttributes, devicePointer), 8);
    CHECK_EQ(sizeof(struct cudaDeviceProp), 1008);
    CHECK_EQ(offsetof(struct cudaDeviceProp, totalGlobalMem), 288);
    CHECK_EQ(offsetof(struct cudaDeviceProp, warpSize), 308);
    CHECK_EQ(offsetof(struct cudaDeviceProp, major), 360);
    CHECK_EQ(offsetof(struct cudaDeviceProp, minor), 364);
    CHECK_EQ(offsetof(struct cudaDeviceProp, multiProcessorCount), 384);
    struct cudaDeviceProp p;
    CHECK_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
    CHECK(strstr(p.name, "simdevice") != NULL);
    CHECK_EQ(p.totalGlobalMem, 64 * MiB);
    CHECK_EQ(p.warpSize, 32);
    int v = 0;
    CHECK_EQ(cudaRuntimeGetVersion(&v), cudaSuccess);
    CHECK_EQ(v, 13000);
    CHECK_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 0), cudaSuccess);
    CHECK_EQ(v, 32);
}

static void test_allocation_rules(void)
{
    void *p = (void *)1;
    CHECK_EQ(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    CHECK_EQ(cudaMalloc(&p, 0), cudaSuccess);
    CHECK(p == NULL);
    CHECK_EQ(cudaFree(NULL), cudaSuccess);
    void *a, *b;
    CHECK_EQ(cudaMalloc(&a, 100), cudaSuccess);
    CHECK_EQ((uintptr_t)a % 512, 0);
    CHECK_EQ(cudaFree(a), cudaSuccess);
    CHECK_EQ(cudaMalloc(&b, 100), cudaSuccess);
    CHECK(a != b); /* next fit: a freed address is not handed out again at once */
    CHECK_EQ(cudaFree(b), cudaSuccess);
}

static void test_round_trip(void)
{
    enum { N = 1 << 20 };
    unsigned char *h = malloc(N), *back = malloc(N);
    void *d1, *d2;
    cudaStream_t s;
    for (int i = 0; i < N; i++)
        h[i] = (unsigned char)(i * 7);
    CHECK_EQ(cudaMalloc(&d1, N), cudaSuccess);
    CHECK_EQ(cudaMalloc(&d2, N), cudaSuccess);
    CHECK_EQ(cudaMemcpy(d1, h, N, cudaMemcpyHostToDevice), cudaSuccess);
    CHECK_EQ(cudaMemset((char *)d1 + 100, 0xAB, 50), cudaSuccess);
    CHECK_EQ(cudaMemcpy(d2, d1, N, cudaMemcpyDeviceToDevice), cudaSuccess);
    CHECK_EQ(cudaMemcpy(back, d2, N, cudaMemcpyDefault), cudaSuccess);
    for (int i = 0; i < N; i++)
        CHECK_EQ(back[i], (i >= 100 && i < 150) ? 0xAB : (unsigned char)(i * 7));
    CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
    CHECK_EQ(cudaMemsetAsync(d2, 3, N, s), cudaSuccess);
    CHECK_EQ(cudaMemcpyAsync(back, d2, N, cudaMemcpyDeviceToHost, s), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    for (int i = 0; i < N; i += 4093)
        CHECK_EQ(back[i], 3);
    /* A kind that contradicts the pointers is refused. */
    CHECK_EQ(cudaMemcpy(back, h, 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    CHECK_EQ(cudaMemcpy(back, d1, 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    CHECK_EQ(cudaMemcpy(back, d1, 16, (enum cudaMemcpyKind)9), cudaErrorInvalidMemcpyDirection);
    CHECK_EQ(cudaMemset(h, 0, 16), cudaErrorInvalidValue);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
    CHECK_EQ(cudaFree(d1), cudaSuccess);
    CHECK_EQ(cudaFree(d2), cudaSuccess);
    free(h);
    free(back);
}

static void test_bad_frees(void)
{
    struct simdev_counters before = sim_counters(0);
    void *p;
    int local;
    CHECK_EQ(cudaMalloc(&p, 4096), cudaSuccess);
    CHECK_EQ(cudaFree((char *)p + 512), cudaErrorInvalidValue); /* interior */
    CHECK_EQ(cudaFree(&local), cudaErrorInvalidValue);          /* garbage */
    CHECK_EQ(cudaFree(p), cudaSuccess);
    CHECK_EQ(cudaFree(p), cudaErrorInvalidValue);               /* double */
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    struct simdev_counters after = sim_counters(0);
    CHECK_EQ(after.invalid_frees - before.invalid_frees, 3);
    CHECK_EQ(after.free_calls - before.free_calls, 1);
}

static void test_out_of_memory(void)
{
    void *a, *b;
    size_t f, t;
    struct simdev_counters before = sim_counters(0);
    CHECK_EQ(cudaMalloc(&a, 48 * MiB), cudaSuccess);
    CHECK_EQ(cudaMemGetInfo(&f, &t), cudaSuccess);
    CHECK_EQ(t, 64 * MiB);
    CHECK_EQ(f, 16 * MiB);
    CHECK_EQ(cudaMalloc(&b, 32 * MiB), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    CHECK_EQ(cudaMallocAsync(&b, 32 * MiB, 0), cudaErrorMemoryAllocation);
    CHECK_EQ(sim_counters(0).oom - before.oom, 2);
    CHECK_EQ(cudaMalloc(&b, 16 * MiB), cudaSuccess); /* exactly what is left */
    CHECK_EQ(cudaFree(b), cudaSuccess);
    CHECK_EQ(cudaFree(a), cudaSuccess);
    CHECK_EQ(sim_counters(0).peak_reserved_bytes, 64 * MiB);
    cudaGetLastError();
}

struct free_arg {
    void *p;
    volatile int returned;
};

static void *free_thread(void *v)
{
    struct free_arg *a = v;
    CHECK_EQ(cudaFree(a->p), cudaSuccess);
    __atomic_store_n(&a->returned, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void test_free_synchronizes_device(void)
{
    cudaStream_t s;
    struct gate g = {0};
    struct free_arg a = {0};
    CHECK_EQ(cudaMalloc(&a.p, 1024), cudaSuccess);
    CHECK_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(s, gate_fn, &g), cudaSuccess);
    uint64_t syncs = sim_counters(0).device_syncs;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, free_thread, &a) == 0);
    usleep(100 * 1000);
    CHECK(!gate_flag(&a.returned)); /* held by the busy stream */
    gate_open(&g);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(gate_flag(&a.returned));
    CHECK_EQ(sim_counters(0).device_syncs - syncs, 1);
    CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(sim_counters(0).device_syncs - syncs, 2);
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
}

static void test_multi_device(void)
{
    int n = 0, d = -1;
    void *p, *q;
    struct cudaPointerAttributes at;
    CHECK_EQ(cudaGetDeviceCount(&n), cudaSuccess);
    CHECK_EQ(n, 2);
    CHECK_EQ(cudaSetDevice(2), cudaErrorInvalidDevice);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
    uint64_t m0 = sim_counters(0).malloc_calls;
    CHECK_EQ(cudaSetDevice(1), cudaSuccess);
    CHECK_EQ(cudaGetDevice(&d), cudaSuccess);
    CHECK_EQ(d, 1);
    CHECK_EQ(cudaMalloc(&p, 4096), cudaSuccess);
    CHECK_EQ(sim_counters(1).malloc_calls, 1);
    CHECK_EQ(sim_counters(0).malloc_calls, m0);
    CHECK_EQ(cudaPointerGetAttributes(&at, p), cudaSuccess);
    CHECK_EQ(at.type, cudaMemoryTypeDevice);
    CHECK_EQ(at.device, 1);
    CHECK(at.devicePointer == p);
    CHECK_EQ(cudaSetDevice(0), cudaSuccess);
    CHECK_EQ(cudaMalloc(&q, 4096), cudaSuccess);
    CHECK_EQ(cudaMemcpy(q, p, 4096, cudaMemcpyDefault), cudaSuccess); /* peer copy */
    CHECK_EQ(cudaFree(p), cudaSuccess); /* another device's pointer: freed, as with UVA */
    CHECK_EQ(sim_counters(1).free_calls, 1);
    CHECK_EQ(cudaFree(q), cudaSuccess);
    struct simdev_counters tot = sim_counters(-1);
    CHECK_EQ(tot.malloc_calls, sim_counters(0).malloc_calls + 1);
}

static void test_host_memory(void)
{
    void *h, *m;
    int local;
    struct cudaPointerAttributes at;
    CHECK_EQ(cudaMallocHost(&h, 1000), cudaSuccess);
    CHECK_EQ(cudaPointerGetAttributes(&at, h), cudaSuccess);
    CHECK_EQ(at.type, cudaMemoryTypeHost);
    CHECK_EQ(cudaPointerGetAttributes(&at, &local), cudaSuccess);
    CHECK_EQ(at.type, cudaMemoryTypeUnregistered);
    uint64_t r = sim_counters(0).reserved_bytes;
    CHECK_EQ(cudaMallocManaged(&m, 1000, cudaMemAttachGlobal), cudaSuccess);
    CHECK_EQ(sim_counters(0).reserved_bytes - r, 1024);
    CHECK_EQ(cudaPointerGetAttributes(&at, m), cudaSuccess);
    CHECK_EQ(at.type, cudaMemoryTypeManaged);
    memset(m, 1, 1000);
    CHECK_EQ(cudaMemset(m, 2, 1000), cudaSuccess);
    CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(((unsigned char *)m)[999], 2);
    CHECK_EQ(cudaFreeHost(m), cudaErrorInvalidValue); /* not page-locked host memory */
    CHECK_EQ(cudaFree(m), cudaSuccess);                /* managed memory goes to cudaFree */
    CHECK_EQ(cudaFreeHost(h), cudaSuccess);
    CHECK_EQ(sim_counters(0).reserved_bytes, r);

    /* Through NVIDIA's runtime: the flags come back with cudaHostAllocMapped set (an H100's
     * driver answers DEVICEMAP for every pinned block), inside the block too; the device
     * pointer is the host address; an address inside is no free. */
    struct simdev_counters c0 = sim_counters(0);
    unsigned f = 0;
    void *dp = NULL;
    CHECK_EQ(cudaHostAlloc(&h, 5000, cudaHostAllocPortable | cudaHostAllocWriteCombined),
             cudaSuccess);
    CHECK_EQ(cudaHostGetFlags(&f, (char *)h + 4096), cudaSuccess);
    CHECK_EQ(f, cudaHostAllocPortable | cudaHostAllocWriteCombined | cudaHostAllocMapped);
    CHECK_EQ(cudaHostGetDevicePointer(&dp, (char *)h + 100, 0), cudaSuccess);
    CHECK(dp == (char *)h + 100);
    CHECK_EQ(cudaMallocHost(&m, 1000), cudaSuccess);
    CHECK_EQ(cudaHostGetFlags(&f, m), cudaSuccess);
    CHECK_EQ(f, cudaHostAllocMapped);
    CHECK_EQ(cudaHostGetFlags(&f, &local), cudaErrorInvalidValue);
    CHECK_EQ(cudaFreeHost((char *)h + 8), cudaErrorInvalidValue);
    CHECK_EQ(sim_counters(0).host_bytes - c0.host_bytes, 6000);
    CHECK_EQ(cudaFreeHost(h), cudaSuccess);
    CHECK_EQ(cudaFreeHost(m), cudaSuccess);
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.host_allocs - c0.host_allocs, 2);
    CHECK_EQ(c.host_frees - c0.host_frees, 2);
    CHECK_EQ(c.host_bytes, c0.host_bytes);
    cudaGetLastError();
}

static void test_kernel_launch_refused(void)
{
    dim3 g = {1, 1, 1}, b = {32, 1, 1};
    static const char fake_kernel = 0;
    CHECK_EQ(cudaLaunchKernel(&fake_kernel, g, b, NULL, 0, 0), cudaErrorNotSupported);
    CHECK_EQ(cudaGetLastError(), cudaErrorNotSupported);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
}

int main(void)
{
    sim_begin("simdevice cuda driver");
    test_abi();
    test_allocation_rules();
    test_round_trip();
    test_bad_frees();
    test_out_of_memory();
    test_free_synchronizes_device();
    test_multi_device();
    test_host_memory();
    test_kernel_launch_refused();
    printf("cuda_memory: all passed\n");
    return 0;
}
