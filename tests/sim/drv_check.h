/* drv_check.h: what the programs that call the simulated driver directly share. They are
 * linked with -lcuda against the simulated libcuda.so.1 and take their prototypes from the
 * toolkit's cuda.h, so a driver declaration that drifted from CUDA's would show here. */
#ifndef SIM_DRV_CHECK_H
#define SIM_DRV_CHECK_H

#include <cuda.h>

#include "check.h"

#define CU_OK(call) CHECK_EQ((call), CUDA_SUCCESS)

/* Checks the simulated driver answers, then initializes it. */
static inline void drv_begin(void)
{
    sim_begin("simdevice cuda driver");
    CU_OK(cuInit(0));
}

/* Retains a device's primary context and makes it current, as NVIDIA's runtime does. */
static inline CUcontext drv_use_primary(CUdevice dev)
{
    CUcontext c = NULL;
    CU_OK(cuDevicePrimaryCtxRetain(&c, dev));
    CHECK(c != NULL);
    CU_OK(cuCtxSetCurrent(c));
    return c;
}

/* A host function that holds its stream until the gate opens. */
static inline void drv_gate_fn(void *g)
{
    gate_wait(g);
}

#endif
