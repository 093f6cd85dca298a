/* hip_device.c: device selection and queries, versions, synchronization, reset. */
#include "hip_front.h"

/* Initializes the runtime: nothing to do. */
API hipError_t hipInit(unsigned flags) { return hip_ret(flags ? SD_EINVAL : SD_OK); }

/* Number of simulated devices; hipErrorNoDevice when there are none. */
API hipError_t hipGetDeviceCount(int *n) { return hip_ret(sd_device_count(n)); }
/* Selects the calling thread's current device. */
API hipError_t hipSetDevice(int d) { return hip_ret(sd_set_device(d)); }
/* The calling thread's current device. */
API hipError_t hipGetDevice(int *d) { return hip_ret(sd_get_device(d)); }

/* hipDeviceAttribute_t values (ROCm 5.2's enumerators) answered; the others are
 * hipErrorInvalidValue. */
static const struct sd_attr attrs[] = {
    {56, 1024}, /* MaxThreadsPerBlock */
    {87, 64},   /* WarpSize */
    {63, 120},  /* MultiprocessorCount */
    {23, 9},    /* ComputeCapabilityMajor */
    {61, 0},    /* ComputeCapabilityMinor */
    {85, 1},    /* UnifiedAddressing */
    {24, 1},    /* ManagedMemory */
    {9, 1},     /* ConcurrentManagedAccess */
    {88, 1},    /* MemoryPoolsSupported */
    {16, 0},    /* Integrated */
};

enum { ATTR_PCI_BUS = 67, ATTR_PCI_DEVICE = 68, ATTR_PCI_DOMAIN = 69, PCI_BUS_BASE = 0x17 };

/* One attribute of a device, from the table above; its PCI address as the CUDA driver's
 * stand-in gives it: bus 0x17 + dev, device and domain 0. */
API hipError_t hipDeviceGetAttribute(int *v, int attr, int dev)
{
    if (attr == ATTR_PCI_BUS || attr == ATTR_PCI_DEVICE || attr == ATTR_PCI_DOMAIN) {
        int rc = sd_check_device_arg(v, dev);
        if (!rc)
            *v = attr == ATTR_PCI_BUS ? PCI_BUS_BASE + dev : 0;
        return hip_ret(rc);
    }
    return hip_ret(sd_device_attr(attrs, sizeof attrs / sizeof attrs[0], v, attr, dev));
}

/* HIP_VERSION of ROCm 5.2.3's headers. */
API hipError_t hipRuntimeGetVersion(int *v) { return hip_ret(sd_put_version(v, 50221153)); }
/* The driver reports the same version. */
API hipError_t hipDriverGetVersion(int *v) { return hip_ret(sd_put_version(v, 50221153)); }

/* Waits until every stream of the current device is idle. */
API hipError_t hipDeviceSynchronize(void) { return hip_ret(sd_device_sync()); }
/* Waits for the device, frees its memory, destroys its streams and events, clears its fault. */
API hipError_t hipDeviceReset(void) { return hip_ret(sd_device_reset()); }
/* The current device's access to peer's memory; flags must be 0, as ROCm requires. */
API hipError_t hipDeviceEnablePeerAccess(int peer, unsigned flags) { return hip_ret(flags ? SD_EINVAL : sd_peer_access(peer, 1)); }
API hipError_t hipDeviceDisablePeerAccess(int peer) { return hip_ret(sd_peer_access(peer, 0)); }
/* Reported possible between two distinct simulated devices. */
API hipError_t hipDeviceCanAccessPeer(int *can, int dev, int peer)
{
    int n = 0;
    sd_device_count(&n);
    if (!can || dev < 0 || peer < 0 || dev >= n || peer >= n)
        return hip_ret(can ? SD_EDEVICE : SD_EINVAL);
    *can = dev != peer;
    return hip_ret(SD_OK);
}

/* Stream priorities exist but are not modelled: the range is [0, 0]. */
API hipError_t hipDeviceGetStreamPriorityRange(int *least, int *greatest) { return sd_priority_range(least, greatest); }
