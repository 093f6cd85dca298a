/* drv_devices.c: the driver before and after cuInit, its version, and what it says about each
 * device (count, name, memory, attributes, UUID, PCI id). Run with SIMDEV_DEVICES=2
 * SIMDEV_MEMORY=64M. */
#include "drv_check.h"

#define MiB ((size_t)1 << 20)

static void before_init(void)
{
    int n = -1, v = 0;
    CUdevice d;
    CUcontext c;
    CUdeviceptr p;
    CHECK_EQ(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_EQ(n, -1);
    CHECK_EQ(cuDeviceGet(&d, 0), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_EQ(cuCtxGetCurrent(&c), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_EQ(cuDevicePrimaryCtxRetain(&c, 0), CUDA_ERROR_NOT_INITIALIZED);
    CHECK_EQ(cuMemAlloc(&p, 512), CUDA_ERROR_NOT_INITIALIZED);
    /* The version is what a program asks before deciding to initialize at all. */
    CU_OK(cuDriverGetVersion(&v));
    CHECK_EQ(v, 13000);
    CHECK_EQ(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
}

static void devices(void)
{
    int n = 0;
    CU_OK(cuDeviceGetCount(&n));
    CHECK_EQ(n, 2);
    CUdevice d = -1;
    CHECK_EQ(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
    CUuuid first;
    for (int i = 0; i < n; i++) {
        CU_OK(cuDeviceGet(&d, i));
        CHECK_EQ(d, i);
        char name[256];
        CU_OK(cuDeviceGetName(name, sizeof name, d));
        CHECK(strstr(name, "simdevice") != NULL);
        CHECK_EQ(cuDeviceGetName(name, 0, d), CUDA_ERROR_INVALID_VALUE);
        size_t total = 0;
        CU_OK(cuDeviceTotalMem(&total, d));
        CHECK_EQ(total, 64 * MiB);
        CUuuid u, again;
        CU_OK(cuDeviceGetUuid(&u, d));
        CU_OK(cuDeviceGetUuid(&again, d));
        CHECK(memcmp(&u, &again, sizeof u) == 0);
        if (i == 0)
            first = u;
        else
            CHECK(memcmp(&u, &first, sizeof u) != 0);
        char bus[32], want[32];
        CU_OK(cuDeviceGetPCIBusId(bus, sizeof bus, d));
        snprintf(want, sizeof want, "0000:%02x:00.0", 0x17 + i);
        CHECK(strcmp(bus, want) == 0);
    }
    CHECK_EQ(cuDeviceTotalMem(&(size_t){0}, 2), CUDA_ERROR_INVALID_DEVICE);
}

static int attr(CUdevice_attribute a, CUdevice d)
{
    int v = -1;
    CU_OK(cuDeviceGetAttribute(&v, a, d));
    return v;
}

static void attributes(void)
{
    CHECK_EQ(attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0), 32);
    CHECK_EQ(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1), 1024);
    CHECK_EQ(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0), 132);
    CHECK_EQ(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0), 9);
    CHECK_EQ(attr(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 0), 1);
    CHECK_EQ(attr(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0), 1);
    /* Each device has its own bus, which the PCI id string and the integrity hash both use. */
    CHECK_EQ(attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 0), 0x17);
    CHECK_EQ(attr(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, 1), 0x18);
    CHECK_EQ(attr(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, 1), 0);
    int v;
    CHECK_EQ(cuDeviceGetAttribute(&v, (CUdevice_attribute)0, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 2), CUDA_ERROR_INVALID_DEVICE);
    CHECK_EQ(cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0),
             CUDA_ERROR_INVALID_VALUE);
}

int main(void)
{
    sim_begin("simdevice cuda driver");
    before_init();
    CU_OK(cuInit(0));
    devices();
    attributes();
    printf("drv_devices: all passed\n");
    return 0;
}
