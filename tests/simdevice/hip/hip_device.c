/* hip_device.c: device selection and queries, versions, synchronization, reset. */
#include "hip_front.h"

/* Initializes the runtime: nothing to do. */
API hipError_t hipInit(unsigned flags) { return hip_ret(flags ? SD_EINVAL : SD_OK); }

/* Number of simulated devices; hipErrorNoDevice when there are none. */
API hipError_t hipGetDeviceCount(int *n)
{
    if (!n)
        return hip_ret(SD_EINVAL);
    *n = sd_device_count();
    return *n ? SD_OK : hip_ret(SD_ENODEV);
}

/* Selects the calling thread's current device. */
API hipError_t hipSetDevice(int d) { return hip_ret(sd_set_device(d)); }

/* The calling thread's current device. */
API hipError_t hipGetDevice(int *d)
{
    if (!d)
        return hip_ret(SD_EINVAL);
    *d = sd_get_device();
    return SD_OK;
}

/* A few attributes (ROCm 5.2's enumerator values); the others are hipErrorInvalidValue. */
API hipError_t hipDeviceGetAttribute(int *v, int attr, int dev)
{
    if (!v)
        return hip_ret(SD_EINVAL);
    if (dev < 0 || dev >= sd_device_count())
        return hip_ret(SD_EDEVICE);
    switch (attr) {
    case 56: *v = 1024; break; /* MaxThreadsPerBlock */
    case 87: *v = 64; break;   /* WarpSize */
    case 63: *v = 120; break;  /* MultiprocessorCount */
    case 23: *v = 9; break;    /* ComputeCapabilityMajor */
    case 61: *v = 0; break;    /* ComputeCapabilityMinor */
    case 85: *v = 1; break;    /* UnifiedAddressing */
    case 24: *v = 1; break;    /* ManagedMemory */
    case 9: *v = 1; break;     /* ConcurrentManagedAccess */
    case 88: *v = 1; break;    /* MemoryPoolsSupported */
    case 16: *v = 0; break;    /* Integrated */
    default: return hip_ret(SD_EINVAL);
    }
    return SD_OK;
}

/* HIP_VERSION of ROCm 5.2.3's headers. */
API hipError_t hipRuntimeGetVersion(int *v)
{
    if (!v)
        return hip_ret(SD_EINVAL);
    *v = 50221153;
    return SD_OK;
}

/* The driver reports the same version. */
API hipError_t hipDriverGetVersion(int *v)
{
    if (!v)
        return hip_ret(SD_EINVAL);
    *v = 50221153;
    return SD_OK;
}

/* Waits until every stream of the current device is idle. */
API hipError_t hipDeviceSynchronize(void) { return hip_ret(sd_device_sync()); }
/* Waits for the device, frees its memory, destroys its streams and events, clears its fault. */
API hipError_t hipDeviceReset(void) { return hip_ret(sd_device_reset()); }

/* Stream priorities exist but are not modelled: the range is [0, 0]. */
API hipError_t hipDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    if (least)
        *least = 0;
    if (greatest)
        *greatest = 0;
    return SD_OK;
}
