/* cuda_device.c: device selection and queries, versions, synchronization, reset. */
#include <string.h>

#include "cuda_front.h"

/* Number of simulated devices; cudaErrorNoDevice when there are none. */
API cudaError_t cudaGetDeviceCount(int *n) { return cuda_ret(sd_device_count(n)); }
/* Selects the calling thread's current device. */
API cudaError_t cudaSetDevice(int d) { return cuda_ret(sd_set_device(d)); }
/* The calling thread's current device. */
API cudaError_t cudaGetDevice(int *d) { return cuda_ret(sd_get_device(d)); }

/* cudaDeviceAttr values answered, with plausible values; the others are cudaErrorInvalidValue. */
static const struct sd_attr attrs[] = {
    {1, 1024},  /* MaxThreadsPerBlock */
    {10, 32},   /* WarpSize */
    {16, 80},   /* MultiProcessorCount */
    {18, 0},    /* Integrated */
    {41, 1},    /* UnifiedAddressing */
    {75, 8},    /* ComputeCapabilityMajor */
    {76, 0},    /* ComputeCapabilityMinor */
    {83, 1},    /* ManagedMemory */
    {89, 1},    /* ConcurrentManagedAccess */
    {115, 1},   /* MemoryPoolsSupported */
};

/* One attribute of a device, from the table above. */
API cudaError_t cudaDeviceGetAttribute(int *v, int attr, int dev)
{
    return cuda_ret(sd_device_attr(attrs, sizeof attrs / sizeof attrs[0], v, attr, dev));
}

/* Fills the fields of CUDA 13's cudaDeviceProp (1008 bytes) that matter here; the rest 0. */
API cudaError_t cudaGetDeviceProperties(void *prop, int dev)
{
    int rc = sd_check_device_arg(prop, dev);
    if (rc)
        return cuda_ret(rc);
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
API cudaError_t cudaRuntimeGetVersion(int *v) { return cuda_ret(sd_put_version(v, 13000)); }
/* 13000: a driver as new as the runtime. */
API cudaError_t cudaDriverGetVersion(int *v) { return cuda_ret(sd_put_version(v, 13000)); }

/* Waits until every stream of the current device is idle. */
API cudaError_t cudaDeviceSynchronize(void) { return cuda_ret(sd_device_sync()); }
/* Waits for the device, frees its memory, destroys its streams and events, clears its fault. */
API cudaError_t cudaDeviceReset(void) { return cuda_ret(sd_device_reset()); }

/* Stream priorities exist but are not modelled: the range is [0, 0]. */
API cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) { return sd_priority_range(least, greatest); }
