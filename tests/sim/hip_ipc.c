/* hip_ipc.c: interprocess memory through the HIP stand-in, between two processes (this program
 * again, ipc_peer.h). ROCm's handle carries the exported pointer's offset: a pointer inside an
 * allocation opens, in the other process, at that same place, not at the allocation's base.
 * With SIMDEV_BASE_OFFSET set the allocation is large, so that it starts past its boundary in
 * both processes. */
#include <hip/hip_runtime_api.h>

#include "check.h"
#include "ipc_peer.h"

#define SIZE (3 * 4096)
#define OFFSET (4096 + 40)

#define HIP_OK(call) CHECK_EQ((call), hipSuccess)

static unsigned char byte_at(size_t i)
{
    return (unsigned char)(i * 31 + 5);
}

/* Checks the n bytes at p are bytes [from, from + n) of the parent's pattern. */
static int holds(const void *p, size_t from, size_t n)
{
    static unsigned char h[SIZE];
    HIP_OK(hipMemcpy(h, p, n, hipMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        if (h[i] != byte_at(from + i))
            return 0;
    return 1;
}

static int child(const char *role, const char *hex)
{
    hipIpcMemHandle_t h;
    void *p = NULL, *again = NULL;
    CHECK(ipc_peer_unhex(hex, &h) == 0);
    CHECK_EQ(hipIpcOpenMemHandle(&p, h, 1), hipErrorInvalidValue);
    if (strcmp(role, "gone") == 0) {
        CHECK_EQ(hipIpcOpenMemHandle(&p, h, hipIpcMemLazyEnablePeerAccess),
                 hipErrorInvalidDevicePointer);
        return 0;
    }
    HIP_OK(hipIpcOpenMemHandle(&p, h, hipIpcMemLazyEnablePeerAccess));
    CHECK(holds(p, OFFSET, SIZE - OFFSET));
    HIP_OK(hipIpcOpenMemHandle(&again, h, hipIpcMemLazyEnablePeerAccess));
    CHECK(again == p);
    CHECK_EQ(hipFree(p), hipErrorInvalidDevicePointer); /* closed, never freed */
    HIP_OK(hipMemset(p, 0xee, 1));
    HIP_OK(hipIpcCloseMemHandle(p));
    HIP_OK(hipIpcCloseMemHandle(p)); /* the offset pointer it returned closes it */
    CHECK_EQ(hipIpcCloseMemHandle(p), hipErrorInvalidHandle);
    CHECK_EQ(hipIpcCloseMemHandle(NULL), hipErrorInvalidValue);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3)
        return child(argv[1], argv[2]);
    sim_begin("simdevice hip");
    /* The stand-in's handle, offsets included, is ROCm's size; its codes are the header's. */
    CHECK_EQ(sizeof(hipIpcMemHandle_t), 64);
    CHECK_EQ(hipErrorInvalidContext, 201);
    CHECK_EQ(hipErrorMapFailed, 205);
    static unsigned char h[SIZE];
    for (size_t i = 0; i < SIZE; i++)
        h[i] = byte_at(i);
    unsigned char *p = NULL;
    const char *lead = getenv("SIMDEV_BASE_OFFSET");
    HIP_OK(hipMalloc((void **)&p, lead ? (2 << 20) + SIZE : SIZE));
    CHECK_EQ((uintptr_t)p % 4096, lead ? (uintptr_t)atoi(lead) : 0);
    HIP_OK(hipMemcpy(p, h, SIZE, hipMemcpyHostToDevice));
    hipIpcMemHandle_t handle, same;
    HIP_OK(hipIpcGetMemHandle(&handle, p + OFFSET));
    CHECK_EQ(ipc_peer_run("open", &handle, NULL, 0), 0);
    HIP_OK(hipMemcpy(h, p + OFFSET, 1, hipMemcpyDeviceToHost));
    CHECK_EQ(h[0], 0xee); /* what the other process wrote */
    CHECK_EQ(hipIpcOpenMemHandle((void **)&p, handle, hipIpcMemLazyEnablePeerAccess),
             hipErrorInvalidContext);
    CHECK_EQ(hipIpcGetMemHandle(&same, h), hipErrorInvalidDevicePointer);
    CHECK_EQ(hipIpcGetMemHandle(NULL, p), hipErrorInvalidValue);
    HIP_OK(hipFree(p));
    CHECK_EQ(ipc_peer_run("gone", &handle, NULL, 0), 0);
    puts("hip_ipc: ok");
    return 0;
}
