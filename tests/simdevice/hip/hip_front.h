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

/* hipMemLocation of ROCm 5.2: type 1 is hipMemLocationTypeDevice, id its ordinal. */
struct hip_mem_location {
    int type;
    int id;
};

/* hipMemAllocationProp of ROCm 5.2 (32 bytes). */
struct hip_mem_allocation_prop {
    unsigned char compressionType;
    struct hip_mem_location location;
    int requestedHandleType;
    int type; /* hipMemAllocationTypePinned 1 */
    unsigned short usage;
    void *win32HandleMetaData;
};

/* hipMemAccessDesc of ROCm 5.2: flags 0 none, 1 read, 3 read-write. */
struct hip_mem_access_desc {
    struct hip_mem_location location;
    int flags;
};

/* Maps a core code to HIP's (a bad free is hipErrorInvalidDevicePointer) and records it. */
hipError_t hip_ret(int rc);

#endif
