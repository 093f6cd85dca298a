// nvcc_static.cu: built by plain nvcc, so NVIDIA's runtime is linked in statically and finds
// the simulated driver by dlopen alone. Memory calls, errors and the sticky fault all come
// back through that runtime unchanged. Run with SIMDEV_MEMORY=64M.
#include <cuda_runtime_api.h>

#include "check.h"

#define MiB ((size_t)1 << 20)

__global__ void fill(int *p) { p[threadIdx.x] = 1; }

static void round_trip()
{
    enum { N = 1 << 20 };
    static unsigned char h[N], back[N];
    for (int i = 0; i < N; i++)
        h[i] = (unsigned char)(i * 13 + 5);
    struct simdev_counters c0 = sim_counters(0);
    void *d = nullptr;
    CHECK_EQ(cudaMalloc(&d, N), cudaSuccess);
    CHECK_EQ(cudaMemset(d, 0x5a, N), cudaSuccess);
    CHECK_EQ(cudaMemcpy(back, d, N, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int i = 0; i < N; i += 997)
        CHECK_EQ(back[i], 0x5a);
    CHECK_EQ(cudaMemcpy(d, h, N, cudaMemcpyHostToDevice), cudaSuccess);
    CHECK_EQ(cudaMemcpy(back, d, N, cudaMemcpyDeviceToHost), cudaSuccess);
    CHECK(memcmp(h, back, N) == 0);
    CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(cudaFree(d), cudaSuccess);
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.malloc_calls - c0.malloc_calls, 1);
    CHECK_EQ(c.free_calls - c0.free_calls, 1);
    CHECK_EQ(c.device_syncs - c0.device_syncs, 2); // the explicit one and cudaFree's
    CHECK_EQ(c.reserved_bytes, 0);
}

static void launch_refused()
{
    int *d = nullptr;
    CHECK_EQ(cudaMalloc(&d, 64 * sizeof(int)), cudaSuccess);
    fill<<<1, 64>>>(d);
    CHECK_EQ(cudaGetLastError(), cudaErrorNotSupported);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    CHECK_EQ(cudaFree(d), cudaSuccess);
}

static void out_of_memory()
{
    void *a = nullptr, *b = nullptr;
    CHECK_EQ(cudaMalloc(&b, 128 * MiB), cudaErrorMemoryAllocation); // more than the device
    CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    CHECK_EQ(cudaMalloc(&a, 48 * MiB), cudaSuccess);
    CHECK_EQ(cudaMalloc(&b, 32 * MiB), cudaErrorMemoryAllocation); // more than is left
    CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    CHECK_EQ(cudaFree(a), cudaSuccess);
}

// Sticky in the driver: the runtime returns 700 for every call until the device is reset.
static void sticky_fault()
{
    void *p = nullptr, *q = nullptr;
    CHECK_EQ(cudaMalloc(&p, 4096), cudaSuccess);
    CHECK_EQ(cudaFree(p), cudaSuccess);
    // The set is queued: the fault comes with the synchronization.
    CHECK_ONE_LINE(cudaMemset(p, 0, 256) ? cudaErrorUnknown : cudaDeviceSynchronize(),
                   cudaErrorIllegalAddress, "illegal address: memset of 256 bytes");
    CHECK_EQ((int)cudaErrorIllegalAddress, 700);
    CHECK_EQ(cudaMalloc(&q, 16), cudaErrorIllegalAddress);
    CHECK_EQ(cudaMemset(p, 0, 16), cudaErrorIllegalAddress);
    CHECK_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    CHECK_EQ(cudaMalloc(&q, 16), cudaErrorIllegalAddress);
    CHECK_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
    CHECK_EQ(cudaDeviceReset(), cudaSuccess);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    CHECK_EQ(cudaMalloc(&q, 16), cudaSuccess);
    CHECK_EQ(cudaFree(q), cudaSuccess);
    CHECK_EQ(sim_counters(0).faults, 1);
}

int main()
{
    sim_begin("simdevice cuda driver");
    round_trip();
    launch_refused();
    out_of_memory();
    sticky_fault();
    printf("nvcc_static: all passed\n");
    return 0;
}
