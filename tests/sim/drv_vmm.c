/* drv_vmm.c: the driver's virtual memory management, as expandable segments use it: reserve,
 * create, map, set access, then copies and sets through the mapping; physical memory counts
 * against capacity while it exists. The first argument names the case, one per process, since
 * a fault is sticky for the rest of it:
 *   data           the round trip, the capacity and the argument checks
 *   before_access  a set into a mapping no device may access yet faults
 *   after_unmap    a copy into an address that was unmapped faults
 *   share          shareable handles: export, import, retain, and their refusals
 *   ranges         address queries: cuMemGetAddressRange and the pointer attributes, as an
 *                  H100 answers them for mapped memory and for cuMemAlloc memory
 * Run with SIMDEV_MEMORY=64M. */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

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

#define POSIX_FD CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR

static CUmemGenericAllocationHandle create_shareable(size_t size)
{
    CUmemAllocationProp p = prop_on(0);
    p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CUmemGenericAllocationHandle h = 0;
    CU_OK(cuMemCreate(&h, size, &p, 0));
    CHECK(h != 0);
    return h;
}

static CUresult import_fd(CUmemGenericAllocationHandle *h, int fd)
{
    return cuMemImportFromShareableHandle(h, (void *)(uintptr_t)fd, POSIX_FD);
}

/* Maps h over all of a fresh reservation of `size` bytes, read-write. */
static CUdeviceptr map_rw(CUmemGenericAllocationHandle h, size_t size)
{
    CUdeviceptr p = reserve(size);
    CU_OK(cuMemMap(p, size, 0, h, 0));
    CU_OK(set_access(p, size, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    return p;
}

/* Exported memory imported again: both handles' mappings show the same bytes, and the import
 * costs no capacity. */
static void share_round_trip(void)
{
    enum { N = 64 * 1024 };
    static unsigned char pat[N], pat2[N], back[N];
    for (int i = 0; i < N; i++) {
        pat[i] = (unsigned char)(i * 13 + 5);
        pat2[i] = (unsigned char)(i * 3 + 101);
    }
    struct simdev_counters c0 = sim_counters(0);
    size_t f0 = free_memory();
    CUmemGenericAllocationHandle h = create_shareable(G);
    CHECK_EQ(free_memory(), f0 - G);
    CUdeviceptr a = map_rw(h, G);
    CU_OK(cuMemcpyHtoD(a + G - N, pat, N)); /* the end: the whole handle is shared */

    int fd = -1;
    CU_OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CHECK(fd >= 0);
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    CUmemGenericAllocationHandle h2 = 0;
    CU_OK(import_fd(&h2, fd));
    CHECK(h2 != 0 && h2 != h);
    CHECK(fcntl(fd, F_GETFD) >= 0); /* still the caller's */
    CHECK_EQ(close(fd), 0);         /* and the import does not need it */
    CHECK_EQ(free_memory(), f0 - G); /* the exporter's memory, counted once */

    CUdeviceptr b = map_rw(h2, G);
    CHECK_EQ(free_memory(), f0 - G);
    CU_OK(cuMemcpyDtoH(back, b + G - N, N));
    CHECK(memcmp(back, pat, N) == 0);
    CU_OK(cuMemcpyHtoD(b, pat2, N));
    CU_OK(cuMemcpyDtoH(back, a, N));
    CHECK(memcmp(back, pat2, N) == 0);
    CU_OK(cuMemsetD8(a + N, 0x5A, 16));
    CU_OK(cuMemcpyDtoH(back, b + N, 16));
    for (int i = 0; i < 16; i++)
        CHECK_EQ(back[i], 0x5A);

    /* A retain anywhere inside the imported mapping finds the imported handle. */
    CUmemGenericAllocationHandle r = 0;
    CU_OK(cuMemRetainAllocationHandle(&r, (void *)(b + G / 2 + 4096)));
    CHECK_EQ(r, h2);
    CU_OK(cuMemRelease(r));

    /* The exporter's side goes first: the import keeps the bytes. */
    CU_OK(cuMemUnmap(a, G));
    CU_OK(cuMemRelease(h));
    CHECK_EQ(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemcpyDtoH(back, b, N));
    CHECK(memcmp(back, pat2, N) == 0);
    CU_OK(cuMemUnmap(b, G));
    CU_OK(cuMemRelease(h2));
    CHECK_EQ(cuMemRelease(h2), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(free_memory(), f0);
    CU_OK(cuMemAddressFree(a, G));
    CU_OK(cuMemAddressFree(b, G));
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.vmm_creates - c0.vmm_creates, 1);
    CHECK_EQ(c.vmm_exports - c0.vmm_exports, 1);
    CHECK_EQ(c.vmm_imports - c0.vmm_imports, 1);
    CHECK_EQ(c.vmm_releases - c0.vmm_releases, 3);
    CHECK_EQ(c.reserved_bytes, c0.reserved_bytes);
}

/* Retains find the mapping holding any address and add a reference that a release drops. */
static void retain(void)
{
    unsigned char buf[256], back[256];
    memset(buf, 0x3C, sizeof buf);
    size_t f0 = free_memory();
    CUdeviceptr base = reserve(3 * G);
    CUmemGenericAllocationHandle h1 = create(G), h2 = create(G), r = 0;
    CU_OK(cuMemMap(base, G, 0, h1, 0));
    CU_OK(cuMemMap(base + G, G, 0, h2, 0));
    CU_OK(set_access(base, 2 * G, CU_MEM_ACCESS_FLAGS_PROT_READWRITE));
    CU_OK(cuMemRetainAllocationHandle(&r, (void *)(base + G + 12345)));
    CHECK_EQ(r, h2); /* the second of two mapped handles, as an H100 answers */
    r = 0;
    CU_OK(cuMemRetainAllocationHandle(&r, (void *)base));
    CHECK_EQ(r, h1);
    CU_OK(cuMemRelease(r));
    CU_OK(cuMemRelease(h1));

    /* Creation and retain: two releases, and a third is refused. */
    CU_OK(cuMemRelease(h2));
    CU_OK(cuMemRelease(h2));
    CHECK_EQ(cuMemRelease(h2), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(free_memory(), f0 - 2 * G); /* still mapped */
    CU_OK(cuMemcpyHtoD(base + G, buf, sizeof buf));
    CU_OK(cuMemcpyDtoH(back, base + G, sizeof back));
    CHECK(memcmp(back, buf, sizeof buf) == 0);
    /* A retain names the memory again: the same handle value comes back. */
    r = 0;
    CU_OK(cuMemRetainAllocationHandle(&r, (void *)(base + 2 * G - 1)));
    CHECK_EQ(r, h2);
    CU_OK(cuMemRelease(r));
    CHECK_EQ(cuMemRelease(h2), CUDA_ERROR_INVALID_VALUE);

    CHECK_EQ(cuMemRetainAllocationHandle(&r, (void *)(base + 2 * G)), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemRetainAllocationHandle(&r, NULL), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemRetainAllocationHandle(&r, &r), CUDA_ERROR_INVALID_VALUE); /* host memory */
    CHECK_EQ(cuMemRetainAllocationHandle(NULL, (void *)base), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemUnmap(base, 2 * G));
    CHECK_EQ(free_memory(), f0);
    CHECK_EQ(cuMemRetainAllocationHandle(&r, (void *)base), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemRelease(h1), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemAddressFree(base, 3 * G));
}

static void share_refusals(void)
{
    CUmemAllocationProp p = prop_on(0);
    CUmemGenericAllocationHandle h = 0, s = create_shareable(G);
    int fd = -1;
    static const int unsupported[] = {CU_MEM_HANDLE_TYPE_WIN32, CU_MEM_HANDLE_TYPE_WIN32_KMT,
                                      CU_MEM_HANDLE_TYPE_FABRIC, 3};
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++) {
        p.requestedHandleTypes = (CUmemAllocationHandleType)unsupported[i];
        CHECK_EQ(cuMemCreate(&h, G, &p, 0), CUDA_ERROR_NOT_SUPPORTED);
    }

    /* Export: only a live handle created with the type, to the type, without flags. */
    h = create(G);
    CHECK_EQ(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
             CUDA_ERROR_INVALID_VALUE); /* as an H100 answers */
    CU_OK(cuMemRelease(h));
    CHECK_EQ(cuMemExportToShareableHandle(&fd, s, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemExportToShareableHandle(&fd, s, CU_MEM_HANDLE_TYPE_FABRIC, 0),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuMemExportToShareableHandle(NULL, s, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(fd, -1);

    /* Import: only a descriptor of exported memory, of the POSIX type. */
    CU_OK(cuMemExportToShareableHandle(&fd, s, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    CHECK_EQ(cuMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_WIN32),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(import_fd(NULL, fd), CUDA_ERROR_INVALID_VALUE);
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    CHECK(null_fd >= 0);
    CHECK_EQ(import_fd(&h, null_fd), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(close(null_fd), 0);
    CHECK_EQ(import_fd(&h, null_fd), CUDA_ERROR_INVALID_VALUE); /* closed */
    CHECK_EQ(import_fd(&h, -1), CUDA_ERROR_INVALID_VALUE);
    int pipe_fd[2];
    CHECK_EQ(pipe(pipe_fd), 0);
    CHECK_EQ(import_fd(&h, pipe_fd[0]), CUDA_ERROR_INVALID_VALUE);
    close(pipe_fd[0]);
    close(pipe_fd[1]);
    int other = memfd_create("simdevice-vmm", MFD_CLOEXEC); /* the process's own memfd's name */
    CHECK(other >= 0 && ftruncate(other, (off_t)G) == 0);
    CHECK_EQ(import_fd(&h, other), CUDA_ERROR_INVALID_VALUE);
    close(other);
    other = memfd_create("simdevice-vmm-share.1", MFD_CLOEXEC); /* a device this one lacks */
    CHECK(other >= 0 && ftruncate(other, (off_t)G) == 0);
    CHECK_EQ(import_fd(&h, other), CUDA_ERROR_INVALID_VALUE);
    close(other);

    /* A released export still imports: the descriptor holds the memory. */
    CU_OK(cuMemRelease(s));
    CHECK_EQ(cuMemExportToShareableHandle(&other, s, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
             CUDA_ERROR_INVALID_VALUE);
    CU_OK(import_fd(&h, fd));
    close(fd);
    CU_OK(cuMemRelease(h));
}

static void share(void)
{
    share_round_trip();
    retain();
    share_refusals();
    CHECK_EQ(sim_counters(0).faults, 0);
}

static void data(void)
{
    granularity();
    round_trip();
    capacity();
    bad_arguments();
    CHECK_EQ(sim_counters(0).faults, 0);
}

#define RW CU_MEM_ACCESS_FLAGS_PROT_READWRITE

static unsigned long long attr(CUpointer_attribute a, CUdeviceptr p)
{
    unsigned long long v = 0;
    CU_OK(cuPointerGetAttribute(&v, a, p));
    return v;
}

/* What an H100 (driver 580) answers, docs/simdevice.md: cuMemGetAddressRange and the MAPPING
 * attributes name the one mapping holding the address, the RANGE attributes its reservation;
 * mapped memory has no context and is not fit for legacy IPC; an unmapped address is unknown
 * memory, save that cuPointerGetAttributes still gives its reservation as the range. */
static void mapped_ranges(void)
{
    CUdeviceptr base = reserve(3 * G);
    CU_OK(cuMemMap(base, G, 0, create(G), 0));
    CU_OK(cuMemMap(base + G, 2 * G, 0, create(2 * G), 0));
    CU_OK(set_access(base, 3 * G, RW));
    CUdeviceptr b = 0;
    size_t n = 0;
    CU_OK(cuMemGetAddressRange(&b, &n, base + 100));
    CHECK_EQ(b, base);
    CHECK_EQ(n, G);
    CU_OK(cuMemGetAddressRange(&b, &n, base + 3 * MiB));
    CHECK_EQ(b, base + G);
    CHECK_EQ(n, 2 * G);

    CUdeviceptr p = base + 3 * MiB;
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, p), base + G);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_MAPPING_SIZE, p), 2 * G);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p), base);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_RANGE_SIZE, p), 3 * G);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p), CU_MEMORYTYPE_DEVICE);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p), 0);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_DEVICE_POINTER, p), p);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_MAPPED, p), 1);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_IS_MANAGED, p), 0);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_CONTEXT, p), 0);
    /* A 32-bit boolean: the upper half of a wider variable stays as it was. */
    unsigned long long legacy = ~0ull;
    CU_OK(cuPointerGetAttribute(&legacy, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p));
    CHECK_EQ(legacy, 0xFFFFFFFF00000000ull);

    CUpointer_attribute as[] = {CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
                                CU_POINTER_ATTRIBUTE_MAPPING_SIZE,
                                CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                                CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                CU_POINTER_ATTRIBUTE_MAPPED};
    CUdeviceptr map_base = 0, range_start = 0;
    size_t map_size = 0, range_size = 0;
    unsigned ipc = 7, type = 0, mapped = 0;
    void *data[] = {&map_base, &map_size, &range_start, &range_size, &ipc, &type, &mapped};
    CU_OK(cuPointerGetAttributes(7, as, data, base + 100));
    CHECK_EQ(map_base, base);
    CHECK_EQ(map_size, G);
    CHECK_EQ(range_start, base);
    CHECK_EQ(range_size, 3 * G);
    CHECK_EQ(ipc, 0);
    CHECK_EQ(type, CU_MEMORYTYPE_DEVICE);
    CHECK_EQ(mapped, 1);

    /* Unmapped: unknown memory, as an H100 answers, though cuPointerGetAttributes still
     * names the reservation. The first mapping answers as before. */
    CU_OK(cuMemUnmap(base + G, 2 * G));
    CHECK_EQ(cuMemGetAddressRange(&b, &n, p), CUDA_ERROR_NOT_FOUND);
    unsigned long long v;
    CHECK_EQ(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p),
             CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_MAPPING_SIZE, p),
             CUDA_ERROR_INVALID_VALUE);
    ipc = 7;
    type = mapped = 9;
    CU_OK(cuPointerGetAttributes(7, as, data, p));
    CHECK_EQ(map_base, 0);
    CHECK_EQ(map_size, 0);
    CHECK_EQ(range_start, base);
    CHECK_EQ(range_size, 3 * G);
    CHECK_EQ(ipc, 0);
    CHECK_EQ(type, 0);
    CHECK_EQ(mapped, 0);
    CU_OK(cuMemGetAddressRange(&b, &n, base + G - 1));
    CHECK_EQ(b, base);
    CHECK_EQ(n, G);
    CU_OK(cuMemUnmap(base, G));
    CHECK_EQ(cuMemGetAddressRange(&b, &n, base), CUDA_ERROR_NOT_FOUND);
    CU_OK(cuMemAddressFree(base, 3 * G));
    CU_OK(cuPointerGetAttributes(7, as, data, base));
    CHECK_EQ(range_start, 0); /* no reservation left: nothing at all */
    CHECK_EQ(range_size, 0);
}

/* cuMemAlloc memory: the allocation is the range, its 2 MiB large pages the mapping (an H100
 * answered 4 MiB for 3 MiB and 1000 bytes), and it is what legacy IPC exports. */
static void alloc_ranges(void)
{
    CUcontext ctx = NULL;
    CU_OK(cuCtxGetCurrent(&ctx));
    const size_t size = 3 * MiB + 1000;
    CUdeviceptr d = 0, b = 0;
    size_t n = 0;
    CU_OK(cuMemAlloc(&d, size));
    CUdeviceptr p = d + 100;
    CU_OK(cuMemGetAddressRange(&b, &n, p));
    CHECK_EQ(b, d);
    CHECK_EQ(n, size);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, p), 1);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR, p), d);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_MAPPING_SIZE, p), 2 * G);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p), d);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_RANGE_SIZE, p), size);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_CONTEXT, p), (uintptr_t)ctx);
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p), CU_MEMORYTYPE_DEVICE);
    CU_OK(cuMemFree(d));

    /* Pinned host memory is no legacy IPC memory either. */
    void *h = NULL;
    CU_OK(cuMemHostAlloc(&h, 4096, 0));
    CHECK_EQ(attr(CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, (CUdeviceptr)h), 0);
    CU_OK(cuMemFreeHost(h));
}

static void ranges(void)
{
    mapped_ranges();
    alloc_ranges();
    CHECK_EQ(sim_counters(0).faults, 0);
}

int main(int argc, char **argv)
{
    drv_begin();
    drv_use_primary(0);
    static const struct sim_case cases[] = {
        {"data", data}, {"before_access", before_access}, {"after_unmap", after_unmap},
        {"share", share}, {"ranges", ranges},
    };
    return sim_run_case("drv_vmm", argc, argv, cases, sizeof cases / sizeof cases[0]);
}
