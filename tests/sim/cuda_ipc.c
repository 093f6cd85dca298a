/* cuda_ipc.c: interprocess memory through NVIDIA's runtime on the simulated driver. The parent
 * exports with cudaIpcGetMemHandle; a second process (this program again, ipc_peer.h) opens the
 * handle with cudaIpcOpenMemHandle, checks the bytes, writes its own, and closes it. */
#include <cuda_runtime.h>

#include "check.h"
#include "ipc_peer.h"

#define SIZE (64 * 1024 + 8)

#define RT_OK(call) CHECK_EQ((call), cudaSuccess)

static void fill(void *d, int seed)
{
    static unsigned char h[SIZE];
    for (size_t i = 0; i < SIZE; i++)
        h[i] = (unsigned char)(i * 13 + (size_t)seed);
    RT_OK(cudaMemcpy(d, h, SIZE, cudaMemcpyHostToDevice));
}

static int holds(const void *d, int seed)
{
    static unsigned char h[SIZE];
    RT_OK(cudaMemcpy(h, d, SIZE, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < SIZE; i++)
        if (h[i] != (unsigned char)(i * 13 + (size_t)seed))
            return 0;
    return 1;
}

static int child(const char *hex)
{
    cudaIpcMemHandle_t h;
    void *p = NULL;
    CHECK(ipc_peer_unhex(hex, &h) == 0);
    RT_OK(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
    CHECK(holds(p, 1));
    fill(p, 2);
    RT_OK(cudaIpcCloseMemHandle(p));
    CHECK_EQ(cudaIpcCloseMemHandle(p), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3)
        return child(argv[2]);
    sim_begin("simdevice cuda driver");
    void *p = NULL, *a = NULL, *opened = NULL;
    RT_OK(cudaMalloc(&p, SIZE));
    fill(p, 1);
    cudaIpcMemHandle_t h;
    RT_OK(cudaIpcGetMemHandle(&h, p));
    CHECK_EQ(ipc_peer_run("open", &h, NULL, 0), 0);
    CHECK(holds(p, 2));
    /* The runtime's own codes for the driver's refusals, and its last error. */
    CHECK_EQ(cudaIpcOpenMemHandle(&opened, h, cudaIpcMemLazyEnablePeerAccess),
             cudaErrorDeviceUninitialized);
    CHECK_EQ(cudaGetLastError(), cudaErrorDeviceUninitialized);
    RT_OK(cudaMallocAsync(&a, 4096, 0));
    CHECK_EQ(cudaIpcGetMemHandle(&h, a), cudaErrorInvalidValue);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
    RT_OK(cudaFreeAsync(a, 0));
    RT_OK(cudaFree(p));
    puts("cuda_ipc: ok");
    return 0;
}
