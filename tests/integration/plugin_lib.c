/* A plugin linked against the CUDA/HIP runtime (or carrying its own copy of the static CUDA
 * runtime), loaded by plugin_main.c and two_runtimes.c with RTLD_LOCAL (as Python loads
 * extension modules): its runtime calls still reach the shim's cache. */
#include "gpu.h"

int ca_plugin_run(void);
int ca_plugin_alloc_free(void);
int ca_plugin_malloc(void **p, size_t n);
int ca_plugin_free(void *p);
int ca_plugin_last_error(void);

/* Allocate and free the same block ten times; 0 on success. */
int ca_plugin_run(void)
{
    for (int i = 0; i < 10; i++) {
        void *p;
        if (gpuMalloc(&p, 1 << 20) != gpuSuccess)
            return 1;
        if (gpuMemset(p, i, 1 << 20) != gpuSuccess)
            return 1;
        if (gpuFree(p) != gpuSuccess)
            return 1;
    }
    return 0;
}

/* One allocation and its free, without device work (usable in a forked child); 0 on success. */
int ca_plugin_alloc_free(void)
{
    void *p;
    if (gpuMalloc(&p, 1 << 20) != gpuSuccess)
        return 1;
    return gpuFree(p) != gpuSuccess;
}

/* Through this plugin's runtime: an allocation, a free, the last error (each copy of the
 * static runtime keeps its own); the runtime's codes. */
int ca_plugin_malloc(void **p, size_t n)
{
    return (int)gpuMalloc(p, n);
}

int ca_plugin_free(void *p)
{
    return (int)gpuFree(p);
}

int ca_plugin_last_error(void)
{
    return (int)gpuGetLastError();
}
