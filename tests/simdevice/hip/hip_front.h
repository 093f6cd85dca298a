/* hip_front.h: the ABI types the HIP stand-in needs, declared here because the simulator must
 * build without HIP. Numeric values and layouts are those of ROCm 5.2's headers (checked by the
 * sim suite against the real ones). */
#ifndef HIP_FRONT_H
#define HIP_FRONT_H

#include <stddef.h>

#include "../core/sd.h"

#define API __attribute__((visibility("default")))

typedef int hipError_t;
typedef void *hipStream_t;
typedef void *hipEvent_t;
typedef struct { unsigned x, y, z; } dim3;

/* hipPointerAttribute_t of ROCm 5.2. */
struct hip_pointer_attribute {
    int memoryType; /* hipMemoryTypeHost 0, Device 1, Array 2, Unified 3 */
    int device;
    void *devicePointer;
    void *hostPointer;
    int isManaged;
    unsigned allocationFlags;
};

/* Maps a core code to HIP's (a bad free is hipErrorInvalidDevicePointer) and records it. */
hipError_t hip_ret(int rc);

#endif
