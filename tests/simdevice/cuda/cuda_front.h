/* cuda_front.h: the ABI types the CUDA stand-in needs, declared here because the simulator must
 * build without the CUDA toolkit. Numeric values and layouts are those of CUDA 13's headers
 * (checked by the sim suite against the real ones). */
#ifndef CUDA_FRONT_H
#define CUDA_FRONT_H

#include <stddef.h>

#include "../core/sd.h"

#define API __attribute__((visibility("default")))

typedef int cudaError_t;
typedef void *cudaStream_t;
typedef void *cudaEvent_t;
typedef void *cudaKernel_t;
typedef struct { unsigned x, y, z; } dim3;

struct cudaPointerAttributes {
    int type;
    int device;
    void *devicePointer;
    void *hostPointer;
    long reserved[8];
};

/* Maps a core code to CUDA's and records it as the thread's last error. */
cudaError_t cuda_ret(int rc);

#endif
