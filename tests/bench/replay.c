/* Trace replay through the CUDA runtime's own cudaMalloc/cudaFree: "plain" as it is, "cache"
 * with libcachealloc.so preloaded (the binary is the same). */
#include <cuda_runtime_api.h>

#include "replay_core.h"

static int rt_alloc(void *ctx, void **p, size_t size)
{
    (void)ctx;
    return cudaMalloc(p, size) == cudaSuccess ? 0 : -1;
}

static int rt_free(void *ctx, void *p)
{
    (void)ctx;
    return cudaFree(p) == cudaSuccess ? 0 : -1;
}

int main(int argc, char **argv)
{
    const replay_allocator al = {.alloc = rt_alloc, .free = rt_free};
    return replay_main(argc, argv, &al);
}
