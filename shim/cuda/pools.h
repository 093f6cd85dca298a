/* The program's own memory pool semantics, which the cache must not stand in for (see
 * pools.c): cuDeviceSetMemPool, cuMemPoolSetAccess and cuMemPoolTrimTo are served there. */
#ifndef CACHEALLOC_SHIM_CUDA_POOLS_H
#define CACHEALLOC_SHIM_CUDA_POOLS_H

/* 1 when a stream-ordered allocation on `stream` must go to the real driver: the stream's
 * device has a pool of the program's own current, or shares its default pool with peers.
 * One atomic load while no device does. */
int ca_drv_pool_passthrough(void *stream);

#endif
