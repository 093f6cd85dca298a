/* drv_vmm.c: the driver's virtual memory management, as expandable segments use it: reserve,
 * create, map, set access, then copies and sets through the mapping; physical memory counts
 * against capacity while it exists. The first argument names the case, one per process, since
 * a fault is sticky for the rest of it:
 *   data           the round trip, the capacity and the argument checks
 *   before_access  a set into a mapping no device may access yet faults
 *   after_unmap    a copy into an address that was unmapped faults
 * Run with SIMDEV_MEMORY=64M. */
#include "drv_check.h"

#define MiB ((size_t)1 << 20)
#define G (2 * MiB) /* the granularity */

static CUmemAllocationProp prop_on(int dev)
{
    CUmemAllocationProp p;
    memset(&p, 0, sizeof p);
    p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.location.id = dev;
    return p;
}

static CUmemGenericAllocationHandle create(size_t size)
{
    CUmemAllocationProp p = prop_on(0);
    CUmemGenericAllocationHandle h = 0;
    CU_OK(cuMemCreate(&h, size, &p, 0));
    CHECK(h != 0);
    return h;
}

static CUresult set_access(CUdeviceptr p, size_t n, CUmemAccess_flags flags)
{
    CUmemAccessDesc d = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, flags};
    return cuMemSetAccess(p, n, &d, 1);
}

static CUdeviceptr reserve(size_t n)
{
    CUdeviceptr p = 0;
    CU_OK(cuMemAddressReserve(&p, n, 0, 0, 0));
    CHECK(p != 0 && p % G == 0);
    return p;
}

static size_t free_memory(void)
{
    size_t f, t;
    CU_OK(cuMemGetInfo(&f, &t));
    return f;
}

static void granularity(void)
{
    CUmemAllocationProp p = prop_on(0);
    size_t g = 0;
    CU_OK(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CHECK_EQ(g, G);
    g = 0;
    CU_OK(cuMemGetAllocationGranularity(&g, &p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    CHECK_EQ(g, G);
    CHECK_EQ(cuMemGetAllocationGranularity(&g, &p, (CUmemAllocationGranularity_flags)7),
             CUDA_ERROR_INVALID_VALUE);
}

static void round_trip(void)
{
    enum { N = 64 * 1024 };
    static unsigned char pat[N], back[N];
    for (int i = 0; i < N; i++)
        pat[i] = (unsigned char)(i * 7 + 1);
    struct simdev_counters c0 = sim_counters(0);
    size_t f0 = free_memory();
    CUdeviceptr base = reserve(4 * G);
    CHECK_EQ(free_memory(), f0); /* addresses cost nothing */
    CUmemGenericAllocationHandle h = create(2 * G);
    CHECK_EQ(free_memory(), f0 - 2 * G);
    CU_OK(cuMemMap(base + G, 2 * G, 0, h, 0));
    CU_OK(set_access(base + G, 2 * G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    CUdeviceptr at = base + 2 * G - N / 2; /* across the middle of the mapping */
    CU_OK(cuMemsetD8(at - 16, 0xA5, N + 32));
    CU_OK(cuMemcpyHtoD(at, pat, N));
    CU_OK(cuMemcpyDtoH(back, at - 16, 16));
    for (int i = 0; i < 16; i++)
        CHECK_EQ(back[i], 0xA5);
    CU_OK(cuMemcpyDtoH(back, at, N));
    CHECK(memcmp(back, pat, N) == 0);
    unsigned type = 0;
    CU_OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, at));
    CHECK_EQ(type, CU_MEMORYTYPE_DEVICE);

    /* The memory stays while it is mapped, even once released. */
    CU_OK(cuMemRelease(h));
    CHECK_EQ(free_memory(), f0 - 2 * G);
    CU_OK(cuMemUnmap(base + G, 2 * G));
    CHECK_EQ(free_memory(), f0);
    CU_OK(cuMemAddressFree(base, 4 * G));
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.vmm_creates - c0.vmm_creates, 1);
    CHECK_EQ(c.vmm_releases - c0.vmm_releases, 1);
    CHECK_EQ(c.maps - c0.maps, 1);
    CHECK_EQ(c.unmaps - c0.unmaps, 1);
    CHECK_EQ(c.reserved_bytes, c0.reserved_bytes);
}

/* Created memory competes with cuMemAlloc for the same capacity. */
static void capacity(void)
{
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp p = prop_on(0);
    CUdeviceptr d;
    CHECK_EQ(cuMemCreate(&h, 64 * MiB + G, &p, 0), CUDA_ERROR_OUT_OF_MEMORY);
    h = create(62 * MiB);
    CHECK_EQ(cuMemAlloc(&d, 4 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    CU_OK(cuMemAlloc(&d, 2 * MiB));
    CU_OK(cuMemFree(d));
    CU_OK(cuMemRelease(h));
    CU_OK(cuMemAlloc(&d, 4 * MiB));
    CU_OK(cuMemFree(d));
}

static void bad_arguments(void)
{
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp p = prop_on(0);
    CUdeviceptr base = reserve(2 * G);
    CHECK_EQ(cuMemCreate(&h, G + 4096, &p, 0), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemCreate(&h, G, &p, 1), CUDA_ERROR_INVALID_VALUE);
    p.location.id = 1;
    CHECK_EQ(cuMemCreate(&h, G, &p, 0), CUDA_ERROR_INVALID_DEVICE);
    h = create(G);
    CHECK_EQ(cuMemMap(base + 4096, G, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemMap(base, G, 0, h, 0));
    CHECK_EQ(cuMemMap(base, G, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* over a mapping */
    CHECK_EQ(cuMemAddressFree(base, 2 * G), CUDA_ERROR_INVALID_VALUE); /* still mapped */
    CU_OK(cuMemUnmap(base, G));
    CU_OK(cuMemRelease(h));
    CHECK_EQ(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAddressFree(base, 2 * G));
}

/* After a fault every later call of the device fails with it. */
static void still_faulted(void)
{
    CUdeviceptr p;
    CHECK_EQ(sim_counters(0).faults, 1);
    CHECK_EQ(cuMemAlloc(&p, 512), CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
}

/* A mapping that gives the device no access: the set faults when it runs. */
static void before_access(void)
{
    CUdeviceptr base = reserve(G);
    CU_OK(cuMemMap(base, G, 0, create(G), 0));
    /* The set is queued: the fault comes with the synchronization. */
    CHECK_ONE_LINE(cuMemsetD8(base, 0, 256) ? CUDA_ERROR_UNKNOWN : cuCtxSynchronize(),
                   CUDA_ERROR_ILLEGAL_ADDRESS, "mapped memory without access");
    still_faulted();
}

/* A range that was mapped and accessible, then unmapped: the copy faults. */
static void after_unmap(void)
{
    unsigned char buf[256] = {0};
    CUdeviceptr base = reserve(G);
    CUmemGenericAllocationHandle h = create(G);
    CU_OK(cuMemMap(base, G, 0, h, 0));
    CU_OK(set_access(base, G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    CU_OK(cuMemcpyHtoD(base, buf, sizeof buf));
    CU_OK(cuMemUnmap(base, G));
    CHECK_ONE_LINE(cuMemcpyHtoD(base, buf, sizeof buf), CUDA_ERROR_ILLEGAL_ADDRESS,
                   "unmapped memory");
    still_faulted();
}

static void data(void)
{
    granularity();
    round_trip();
    capacity();
    bad_arguments();
    CHECK_EQ(sim_counters(0).faults, 0);
}

int main(int argc, char **argv)
{
    drv_begin();
    drv_use_primary(0);
    static const struct sim_case cases[] = {
        {"data", data}, {"before_access", before_access}, {"after_unmap", after_unmap},
    };
    return sim_run_case("drv_vmm", argc, argv, cases, sizeof cases / sizeof cases[0]);
}
