/* hip_ipc.c: interprocess memory, hipIpc*, as ROCm 5.2's runtime answers it. Unlike CUDA's,
 * ROCm's handle carries the exported pointer's offset in its allocation (ihipIpcMemHandle_t's
 * poffset), and hipIpcOpenMemHandle returns the importer's base plus that offset: an interior
 * pointer exports exactly the bytes it points at. The codes are those ROCm's hip_memory.cpp
 * returns, where they differ from its header's list. */
#include "hip_front.h"

/* hipIpcMemHandle_t: 64 opaque bytes, passed by value. */
typedef struct { char reserved[SD_IPC_HANDLE_SIZE]; } hipIpcMemHandle_t;

/* hipIpcMemLazyEnablePeerAccess is 0 in HIP, and ROCm accepts nothing else. */
#define HIP_IPC_LAZY_PEER 0u

/* Exports the hipMalloc allocation holding p, with p's offset in it. */
API hipError_t hipIpcGetMemHandle(hipIpcMemHandle_t *h, void *p)
{
    if (!h || !p)
        return hip_ret(SD_EINVAL);
    int rc = sd_ipc_export(p, h, 1);
    /* ROCm: memory its IpcCreate cannot export is an invalid device pointer. */
    return hip_ret(rc == SD_EINVAL ? SD_EDEVPTR : rc);
}

/* Maps another process's export and returns its base plus the handle's offset. */
API hipError_t hipIpcOpenMemHandle(void **p, hipIpcMemHandle_t h, unsigned flags)
{
    if (!p || flags != HIP_IPC_LAZY_PEER)
        return hip_ret(SD_EINVAL);
    int rc = sd_ipc_open(&h, p);
    /* ROCm: an attach that fails (the exporter or its memory gone) is an invalid pointer. */
    return hip_ret(rc == SD_EMAP ? SD_EDEVPTR : rc);
}

/* Drops one open of the imported allocation holding p (offset pointers included, as ROCm
 * finds the memory object by any address inside it). */
API hipError_t hipIpcCloseMemHandle(void *p)
{
    return hip_ret(sd_ipc_close(p, 1));
}
