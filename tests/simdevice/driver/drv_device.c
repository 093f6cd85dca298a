/* drv_device.c: initialization, the driver version, devices and their attributes. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "drv.h"

static atomic_bool initialized;

CUresult drv_ret(int rc)
{
    switch (rc) {
    case SD_EBADFREE:
    case SD_EDIR:
    case SD_EDEVPTR:
        return CUDA_ERROR_INVALID_VALUE;
    default:
        return rc; /* the core numbers the rest as the driver does */
    }
}

bool drv_initialized(void)
{
    return atomic_load_explicit(&initialized, memory_order_acquire);
}

int drv_device_count(void)
{
    int n = 0;
    sd_device_count(&n);
    return n;
}

/* Initializes the driver; flags must be 0. */
API CUresult cuInit(unsigned flags)
{
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (drv_device_count() == 0)
        return CUDA_ERROR_NO_DEVICE;
    atomic_store_explicit(&initialized, true, memory_order_release);
    return CUDA_SUCCESS;
}

/* The driver's CUDA version; answered before cuInit, as the real one is. */
API CUresult cuDriverGetVersion(int *version)
{
    return drv_ret(sd_put_version(version, DRV_VERSION));
}

static CUresult check_dev(const void *out, CUdevice dev)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    return drv_ret(sd_check_device_arg(out, dev));
}

/* Number of simulated devices. */
API CUresult cuDeviceGetCount(int *count)
{
    if (!drv_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = drv_device_count();
    return CUDA_SUCCESS;
}

/* The device handle of an ordinal (the same number here). */
API CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    CUresult rc = check_dev(dev, ordinal);
    if (!rc)
        *dev = ordinal;
    return rc;
}

/* The device's marketing name. */
API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult rc = check_dev(name, dev);
    if (rc)
        return rc;
    if (len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "Simulated GPU (simdevice)");
    return CUDA_SUCCESS;
}

/* Total memory of a device (SIMDEV_MEMORY). */
API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult rc = check_dev(bytes, dev);
    if (!rc)
        *bytes = sd_capacity();
    return rc;
}

/* A stable UUID per device: "simdevice" and the ordinal. */
static void uuid_of(CUdevice dev, CUuuid *u)
{
    memset(u, 0, sizeof *u);
    memcpy(u->bytes, "simdevice-gpu", 13);
    u->bytes[14] = (char)(dev >> 8);
    u->bytes[15] = (char)dev;
}

/* The device's UUID. */
API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    CUresult rc = check_dev(uuid, dev);
    if (!rc)
        uuid_of(dev, uuid);
    return rc;
}

/* The CUDA 9.2 form: the same UUID. */
API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid_v2(uuid, dev);
}

enum { PCI_BUS_BASE = 0x17 };

/* Attributes with a value other than 0; the others (1..147) read as 0, which the runtime
 * accepts. Values are those of a Hopper-class device, except what the simulator models. */
static const struct sd_attr attrs[] = {
    {1, 1024}, {2, 1024}, {3, 1024}, {4, 64}, {5, 2147483647}, {6, 65535}, {7, 65535},
    {8, 49152}, {9, 65536}, {10, 32}, {11, 2147483647}, {12, 65536}, {13, 1980000},
    {14, 512}, {15, 1}, {16, 132}, {19, 1}, {21, 131072}, {22, 131072}, {23, 65536},
    {24, 16384}, {25, 16384}, {26, 16384}, {30, 512}, {31, 1}, {36, 2619000}, {37, 5120},
    {38, 52428800}, {39, 2048}, {40, 2}, {41, 1}, {51, 32}, {75, 9}, {76, 0}, {78, 1},
    {79, 1}, {80, 1}, {81, 233472}, {82, 65536}, {83, 1}, {86, 0}, {87, 2}, {89, 1}, {90, 1},
    {91, 1}, {95, 1}, {97, 232448}, {99, 1}, {102, 1}, {103, 1}, {106, 32}, {111, 1024},
    {115, 1}, {119, 1}, {120, 1}, {122, 1}, {126, 4},
};

enum { ATTR_PCI_BUS = 33, ATTR_PCI_DOMAIN = 50, ATTR_MAX = 147 };

/* One device attribute. */
API CUresult cuDeviceGetAttribute(int *value, int attr, CUdevice dev)
{
    CUresult rc = check_dev(value, dev);
    if (rc)
        return rc;
    if (attr < 1 || attr > ATTR_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    if (attr == ATTR_PCI_BUS) {
        *value = PCI_BUS_BASE + dev;
        return CUDA_SUCCESS;
    }
    if (sd_device_attr(attrs, sizeof attrs / sizeof *attrs, value, attr, dev) != SD_OK)
        *value = 0;
    return CUDA_SUCCESS;
}

/* The PCI bus id string, "0000:17:00.0" for device 0. */
API CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice dev)
{
    CUresult rc = check_dev(id, dev);
    if (rc)
        return rc;
    if (len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(id, (size_t)len, "0000:%02x:00.0", PCI_BUS_BASE + dev);
    return CUDA_SUCCESS;
}

/* Peer access between two distinct simulated devices is reported possible. */
API CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    CUresult rc = check_dev(can, dev);
    if (!rc)
        rc = check_dev(can, peer);
    if (!rc)
        *can = dev != peer;
    return rc;
}
