/* cuda_launch.c: what nvcc-generated host code calls: fat binary registration (accepted and
 * forgotten) and kernel launches (refused: kernels cannot run here). */
#include "cuda_front.h"

struct launch_config {
    dim3 grid, block;
    size_t shared;
    void *stream;
};
static __thread struct launch_config pushed;
static void *fake_handle[4];

/* Returns a handle for the module; nothing is loaded. */
API void **__cudaRegisterFatBinary(void *fat) { (void)fat; return fake_handle; }
/* Ends a module's registration. */
API void __cudaRegisterFatBinaryEnd(void **h) { (void)h; }
/* Forgets a module. */
API void __cudaUnregisterFatBinary(void **h) { (void)h; }
/* Accepts a kernel's registration. */
API void __cudaRegisterFunction(void **h, const char *hf, char *df, const char *name, int tl,
                                void *tid, void *bid, void *bd, void *gd, int *ws)
{
    (void)h; (void)hf; (void)df; (void)name; (void)tl; (void)tid; (void)bid; (void)bd; (void)gd; (void)ws;
}
/* Accepts a device variable's registration. */
API void __cudaRegisterVar(void **h, char *hv, char *da, const char *name, int ext, size_t size,
                           int constant, int global)
{
    (void)h; (void)hv; (void)da; (void)name; (void)ext; (void)size; (void)constant; (void)global;
}
/* Accepts a managed variable's registration. */
API void __cudaRegisterManagedVar(void **h, void **hv, char *da, const char *name, int ext,
                                  size_t size, int constant, int global)
{
    (void)h; (void)hv; (void)da; (void)name; (void)ext; (void)size; (void)constant; (void)global;
}
/* Module initialization: reported done. */
API char __cudaInitModule(void **h) { (void)h; return 1; }
/* Stores a <<<>>> configuration for the following pop. */
API unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, void *stream)
{
    pushed = (struct launch_config){grid, block, shared, stream};
    return 0;
}
/* Hands back the stored <<<>>> configuration. */
API cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shared, void *stream)
{
    if (grid) *grid = pushed.grid;
    if (block) *block = pushed.block;
    if (shared) *shared = pushed.shared;
    if (stream) *(void **)stream = pushed.stream;
    return SD_OK;
}
/* Maps a host stub to a kernel handle (the stub's own address). */
API cudaError_t __cudaGetKernel(cudaKernel_t *k, const void *fn)
{
    if (!k)
        return cuda_ret(SD_EINVAL);
    *k = (cudaKernel_t)fn;
    return SD_OK;
}

static cudaError_t refuse(const char *what) { return cuda_ret(sd_launch_refused(what)); }

/* Kernel launch: cudaErrorNotSupported, recorded as the last error. */
API cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **a, size_t sh, cudaStream_t s)
{ (void)k; (void)g; (void)b; (void)a; (void)sh; (void)s; return refuse("__cudaLaunchKernel"); }
/* Kernel launch (per-thread default stream): refused likewise. */
API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void **a, size_t sh, cudaStream_t s)
{ (void)k; (void)g; (void)b; (void)a; (void)sh; (void)s; return refuse("__cudaLaunchKernel_ptsz"); }
/* Kernel launch: refused likewise. */
API cudaError_t cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **a, size_t sh, cudaStream_t s)
{ (void)f; (void)g; (void)b; (void)a; (void)sh; (void)s; return refuse("cudaLaunchKernel"); }
/* Kernel launch (per-thread default stream): refused likewise. */
API cudaError_t cudaLaunchKernel_ptsz(const void *f, dim3 g, dim3 b, void **a, size_t sh, cudaStream_t s)
{ (void)f; (void)g; (void)b; (void)a; (void)sh; (void)s; return refuse("cudaLaunchKernel_ptsz"); }
