/* drv_ipc.c: interprocess memory, cuIpc*. A handle names the whole allocation holding the
 * pointer, so the importer gets that allocation's base, as NVIDIA's driver does (an interior
 * pointer exports the same handle as its base). The core backs exported memory so that both
 * processes see the same bytes. */
#include "drv.h"

/* CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS: peer access is not modelled, so it changes nothing. */
#define IPC_LAZY_PEER 0x1u

/* Exports the cuMemAlloc allocation holding dptr; other memory is an invalid value. */
API CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr dptr)
{
    CUresult rc = drv_enter_live();
    if (rc || !h)
        return rc ? rc : CUDA_ERROR_INVALID_VALUE;
    return drv_ret(sd_ipc_export((void *)dptr, h, 0));
}

/* Maps another process's exported allocation into the current context and returns its base. */
API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned flags)
{
    CUresult rc = drv_enter_live();
    if (rc || !p || (flags & ~IPC_LAZY_PEER))
        return rc ? rc : CUDA_ERROR_INVALID_VALUE;
    void *base = NULL;
    rc = drv_ret(sd_ipc_open(&h, &base));
    if (rc == CUDA_SUCCESS)
        *p = (CUdeviceptr)base;
    return rc;
}

/* The CUDA 4.1 ABI of the same call. */
API CUresult cuIpcOpenMemHandle(CUdeviceptr *p, CUipcMemHandle h, unsigned flags)
{
    return cuIpcOpenMemHandle_v2(p, h, flags);
}

/* Drops one open of an imported allocation (the pointer cuIpcOpenMemHandle returned). */
API CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    CUresult rc = drv_enter_live();
    return rc ? rc : drv_ret(sd_ipc_close((void *)dptr, 0));
}
