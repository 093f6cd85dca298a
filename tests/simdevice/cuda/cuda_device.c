/* cuda_device.c: device selection and queries, versions, synchronization, reset. */
#include <string.h>

#include "cuda_front.h"

/* Number of simulated devices; cudaErrorNoDevice when there are none. */
API cudaError_t cudaGetDeviceCount(int *n)
{
    if (!n)
        return cuda_ret(SD_EINVAL);
    *n = sd_device_count();
    return *n ? SD_OK : cuda_ret(SD_ENODEV);
}

/* Selects the calling thread's current device. */
API cudaError_t cudaSetDevice(int d) { return cuda_ret(sd_set_device(d)); }

/* The calling thread's current device. */
API cudaError_t cudaGetDevice(int *d)
{
    if (!d)
        return cuda_ret(SD_EINVAL);
    *d = sd_get_device();
    return SD_OK;
}

/* A few attributes with plausible values; the others are cudaErrorInvalidValue. */
API cudaError_t cudaDeviceGetAttribute(int *v, int attr, int dev)
{
    if (!v)
        return cuda_ret(SD_EINVAL);
    if (dev < 0 || dev >= sd_device_count())
        return cuda_ret(SD_EDEVICE);
    switch (attr) {
    case 1: *v = 1024; break;   /* MaxThreadsPerBlock */
    case 10: *v = 32; break;    /* WarpSize */
    case 16: *v = 80; break;    /* MultiProcessorCount */
    case 18: *v = 0; break;     /* Integrated */
    case 41: *v = 1; break;     /* UnifiedAddressing */
    case 75: *v = 8; break;     /* ComputeCapabilityMajor */
    case 76: *v = 0; break;     /* ComputeCapabilityMinor */
    case 83: *v = 1; break;     /* ManagedMemory */
    case 89: *v = 1; break;     /* ConcurrentManagedAccess */
    case 115: *v = 1; break;    /* MemoryPoolsSupported */
    default: return cuda_ret(SD_EINVAL);
    }
    return SD_OK;
}

/* Fills the fields of CUDA 13's cudaDeviceProp (1008 bytes) that matter here; the rest 0. */
API cudaError_t cudaGetDeviceProperties(void *prop, int dev)
{
    if (!prop)
        return cuda_ret(SD_EINVAL);
    if (dev < 0 || dev >= sd_device_count())
        return cuda_ret(SD_EDEVICE);
    unsigned char *b = prop;
    memset(b, 0, 1008);
    strcpy((char *)b, "simdevice");
    size_t mem = sd_capacity();
    int warp = 32, major = 8, minor = 0, sms = 80;
    memcpy(b + 288, &mem, sizeof mem);     /* totalGlobalMem */
    memcpy(b + 308, &warp, sizeof warp);   /* warpSize */
    memcpy(b + 360, &major, sizeof major); /* major */
    memcpy(b + 364, &minor, sizeof minor); /* minor */
    memcpy(b + 384, &sms, sizeof sms);     /* multiProcessorCount */
    return SD_OK;
}

/* 13000: the runtime these stand in for. */
API cudaError_t cudaRuntimeGetVersion(int *v)
{
    if (!v)
        return cuda_ret(SD_EINVAL);
    *v = 13000;
    return SD_OK;
}

/* 13000: a driver as new as the runtime. */
API cudaError_t cudaDriverGetVersion(int *v)
{
    if (!v)
        return cuda_ret(SD_EINVAL);
    *v = 13000;
    return SD_OK;
}

/* Waits until every stream of the current device is idle. */
API cudaError_t cudaDeviceSynchronize(void) { return cuda_ret(sd_device_sync()); }
/* Waits for the device, frees its memory, destroys its streams and events, clears its fault. */
API cudaError_t cudaDeviceReset(void) { return cuda_ret(sd_device_reset()); }

/* Stream priorities exist but are not modelled: the range is [0, 0]. */
API cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest)
{
    if (least)
        *least = 0;
    if (greatest)
        *greatest = 0;
    return SD_OK;
}
