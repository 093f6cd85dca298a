/* A shared library that carries the static CUDA runtime's marker string (as NVIDIA's math
 * libraries do) and loads the driver: the shim looks into its file at the first load. */
#include <dlfcn.h>

/* The string the shim looks for in a static runtime. */
const char ca_marker_text[] = "CUDA driver version is insufficient for CUDA runtime version";

void *ca_marker_load_driver(void);

/* dlopen of the driver by name, never loading it (no driver here): what the static runtime
 * does at its first call. Not a tail call: the shim must see this library as the caller. */
void *ca_marker_load_driver(void)
{
    void *volatile h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return h;
}
