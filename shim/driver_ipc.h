/* Interprocess memory at the CUDA door (driver_ipc.c): cuIpcGetMemHandle is served there. */
#ifndef CACHEALLOC_SHIM_DRIVER_IPC_H
#define CACHEALLOC_SHIM_DRIVER_IPC_H

#include "runtime.h"

/* 1 when rt is the CUDA door of a process that exported one of the cache's blocks: its plain
 * allocations are then driver allocations of their own, which export correctly. */
int ca_drv_ipc_dedicated(const ca_runtime *rt);

/* A dedicated allocation of such a process: the real call, repeated once after the cache gave
 * back what it holds unused when the device is full. */
ca_rt_err ca_drv_ipc_malloc(ca_runtime *rt, void **ptr, size_t size);

#endif
