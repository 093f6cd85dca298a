/* hip_launch.c: what hipcc-generated host code calls: code object registration (accepted and
 * forgotten) and kernel launches (refused: kernels cannot run here). */
#include "hip_front.h"

struct launch_config {
    dim3 grid, block;
    size_t shared;
    hipStream_t stream;
};
static __thread struct launch_config pushed;
static void *fake_handle[4];

/* Returns a handle for the code object; nothing is loaded. */
API void **__hipRegisterFatBinary(const void *data) { (void)data; return fake_handle; }
/* Forgets a code object. */
API void __hipUnregisterFatBinary(void **h) { (void)h; }
/* Accepts a kernel's registration. */
API void __hipRegisterFunction(void **h, const void *hf, char *df, const char *name, unsigned tl,
                               void *tid, void *bid, void *bd, void *gd, int *ws)
{
    (void)h; (void)hf; (void)df; (void)name; (void)tl; (void)tid; (void)bid; (void)bd; (void)gd; (void)ws;
}
/* Accepts a device variable's registration. */
API void __hipRegisterVar(void **h, void *var, char *hv, char *dv, int ext, size_t size,
                          int constant, int global)
{
    (void)h; (void)var; (void)hv; (void)dv; (void)ext; (void)size; (void)constant; (void)global;
}
/* Stores a <<<>>> configuration for the following pop. */
API hipError_t __hipPushCallConfiguration(dim3 g, dim3 b, size_t sh, hipStream_t s)
{
    pushed = (struct launch_config){g, b, sh, s};
    return SD_OK;
}
/* Hands back the stored <<<>>> configuration. */
API hipError_t __hipPopCallConfiguration(dim3 *g, dim3 *b, size_t *sh, hipStream_t *s)
{
    if (g) *g = pushed.grid;
    if (b) *b = pushed.block;
    if (sh) *sh = pushed.shared;
    if (s) *s = pushed.stream;
    return SD_OK;
}
/* Kernel launch: hipErrorNotSupported, recorded as the last error. */
API hipError_t hipLaunchKernel(const void *f, dim3 g, dim3 b, void **a, size_t sh, hipStream_t s)
{
    (void)f; (void)g; (void)b; (void)a; (void)sh; (void)s;
    return hip_ret(sd_launch_refused("hipLaunchKernel"));
}
