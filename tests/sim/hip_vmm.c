/* hip_vmm.c: the HIP stand-in's virtual memory management: granularity; data through mappings,
 * across two mappings (and two adjacent reservations), one handle seen at two addresses;
 * capacity; faults before set-access, after unmap and on read-only mappings; release + unmap
 * and device reset returning the memory; the documented error for each bad argument; shareable
 * handles (POSIX descriptors), retains and the address range of mapped memory.
 * Run with SIMDEV_MEMORY=64M and one device. */
#include <fcntl.h>
#include <hip/hip_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "check.h"

#define MiB ((size_t)1 << 20)
#define G (2 * MiB) /* the granularity */

static hipMemAllocationProp prop_on(int dev)
{
    hipMemAllocationProp p = {0};
    p.type = hipMemAllocationTypePinned;
    p.location.type = hipMemLocationTypeDevice;
    p.location.id = dev;
    return p;
}

static hipMemGenericAllocationHandle_t create(size_t size)
{
    hipMemAllocationProp p = prop_on(0);
    hipMemGenericAllocationHandle_t h = NULL;
    CHECK_EQ(hipMemCreate(&h, size, &p, 0), hipSuccess);
    CHECK(h != NULL);
    return h;
}

static hipError_t set_access(void *p, size_t n, hipMemAccessFlags flags)
{
    hipMemAccessDesc d = {{hipMemLocationTypeDevice, 0}, flags};
    return hipMemSetAccess(p, n, &d, 1);
}

static char *reserve(size_t n)
{
    void *p = NULL;
    CHECK_EQ(hipMemAddressReserve(&p, n, 0, NULL, 0), hipSuccess);
    CHECK(p != NULL && (uintptr_t)p % G == 0);
    return p;
}

static void granularity(void)
{
    hipMemAllocationProp p = prop_on(0);
    size_t g = 0;
    CHECK_EQ(hipMemGetAllocationGranularity(&g, &p, hipMemAllocationGranularityMinimum), hipSuccess);
    CHECK_EQ(g, G);
    g = 0;
    CHECK_EQ(hipMemGetAllocationGranularity(&g, &p, hipMemAllocationGranularityRecommended),
             hipSuccess);
    CHECK_EQ(g, G);
    CHECK_EQ(hipMemGetAllocationGranularity(&g, &p, (hipMemAllocationGranularity_flags)7),
             hipErrorInvalidValue);
    p.location.id = 5;
    CHECK_EQ(hipMemGetAllocationGranularity(&g, &p, hipMemAllocationGranularityMinimum),
             hipErrorInvalidValue);
}

/* Two handles mapped back to back, one also mapped a second time: copies and sets see one
 * contiguous buffer and shared bytes; release + unmap gives the memory back. */
static void data(void)
{
    enum { N = 64 * 1024 };
    static unsigned char pat[N], back[2 * N];
    for (int i = 0; i < N; i++)
        pat[i] = (unsigned char)(i * 7 + 1);
    struct simdev_counters c0 = sim_counters(0);
    char *base = reserve(4 * G);
    hipMemGenericAllocationHandle_t h1 = create(G), h2 = create(G);
    CHECK_EQ(hipMemMap(base, G, 0, h1, 0), hipSuccess);
    CHECK_EQ(hipMemMap(base + G, G, 0, h2, 0), hipSuccess);
    CHECK_EQ(set_access(base, 2 * G, hipMemAccessFlagsProtReadWrite), hipSuccess);
    hipPointerAttribute_t at;
    CHECK_EQ(hipPointerGetAttributes(&at, base + G + 5), hipSuccess);
    CHECK_EQ(at.memoryType, hipMemoryTypeDevice);
    CHECK_EQ(at.device, 0);

    /* A set and a copy across the boundary of the two mappings. */
    CHECK_EQ(hipMemset(base, 0x11, 2 * G), hipSuccess);
    CHECK_EQ(hipMemcpy(base + G - N / 2, pat, N, hipMemcpyHostToDevice), hipSuccess);
    CHECK_EQ(hipMemcpy(back, base + G - N, 2 * N, hipMemcpyDeviceToHost), hipSuccess);
    for (int i = 0; i < 2 * N; i++)
        CHECK_EQ(back[i], i < N / 2 || i >= N / 2 + N ? 0x11 : pat[i - N / 2]);
    CHECK_EQ(hipMemcpy(base + 100, base + G - N / 2, N, hipMemcpyDeviceToDevice), hipSuccess);
    CHECK_EQ(hipMemcpy(back, base + 100, N, hipMemcpyDeviceToHost), hipSuccess);
    CHECK(memcmp(back, pat, N) == 0);

    /* h1 again at base + 2G: the same bytes, both ways. */
    CHECK_EQ(hipMemMap(base + 2 * G, G, 0, h1, 0), hipSuccess);
    CHECK_EQ(set_access(base + 2 * G, G, hipMemAccessFlagsProtReadWrite), hipSuccess);
    CHECK_EQ(hipMemcpy(back, base + 2 * G + 100, N, hipMemcpyDeviceToHost), hipSuccess);
    CHECK(memcmp(back, pat, N) == 0);
    CHECK_EQ(hipMemset(base + 2 * G + 7, 0x5a, 1), hipSuccess);
    CHECK_EQ(hipMemcpy(back, base + 7, 1, hipMemcpyDeviceToHost), hipSuccess);
    CHECK_EQ(back[0], 0x5a);

    /* Mapping twice costs no memory; released handles keep theirs until unmapped. */
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.reserved_bytes - c0.reserved_bytes, 2 * G);
    CHECK_EQ(c.vmm_creates - c0.vmm_creates, 2);
    CHECK_EQ(c.maps - c0.maps, 3);
    CHECK_EQ(hipMemRelease(h1), hipSuccess);
    CHECK_EQ(hipMemRelease(h2), hipSuccess);
    CHECK_EQ(sim_counters(0).reserved_bytes - c0.reserved_bytes, 2 * G);
    CHECK_EQ(hipMemUnmap(base + 2 * G, G), hipSuccess);
    CHECK_EQ(sim_counters(0).reserved_bytes - c0.reserved_bytes, 2 * G);
    CHECK_EQ(hipMemUnmap(base, 2 * G), hipSuccess); /* two mappings in one call */
    c = sim_counters(0);
    CHECK_EQ(c.reserved_bytes, c0.reserved_bytes);
    CHECK_EQ(c.vmm_releases - c0.vmm_releases, 2);
    CHECK_EQ(c.unmaps - c0.unmaps, 3);
    CHECK_EQ(hipMemAddressFree(base, 4 * G), hipSuccess);
}

/* A reservation made next to another at the hint continues it: an access may span both. */
static void adjacent_reservations(void)
{
    char *a = reserve(G);
    void *b = NULL;
    CHECK_EQ(hipMemAddressReserve(&b, G, 0, a + 8 * G, 0), hipSuccess);
    CHECK(b == a + 8 * G); /* a free hint is honoured */
    CHECK_EQ(hipMemAddressFree(b, G), hipSuccess);
    CHECK_EQ(hipMemAddressReserve(&b, G, 0, a + G, 0), hipSuccess);
    CHECK(b == a + G);
    hipMemGenericAllocationHandle_t h1 = create(G), h2 = create(G);
    CHECK_EQ(hipMemMap(a, G, 0, h1, 0), hipSuccess);
    CHECK_EQ(hipMemMap(b, G, 0, h2, 0), hipSuccess);
    CHECK_EQ(set_access(a, G, hipMemAccessFlagsProtReadWrite), hipSuccess);
    CHECK_EQ(set_access(b, G, hipMemAccessFlagsProtReadWrite), hipSuccess);
    static unsigned char in[8192], out[8192];
    for (int i = 0; i < 8192; i++)
        in[i] = (unsigned char)(i ^ 0x3c);
    CHECK_EQ(hipMemcpy(a + G - 4096, in, 8192, hipMemcpyHostToDevice), hipSuccess);
    CHECK_EQ(hipMemcpy(out, a + G - 4096, 8192, hipMemcpyDeviceToHost), hipSuccess);
    CHECK(memcmp(in, out, sizeof in) == 0);
    CHECK_EQ(hipMemRelease(h1), hipSuccess);
    CHECK_EQ(hipMemRelease(h2), hipSuccess);
    CHECK_EQ(hipMemUnmap(a, G), hipSuccess);
    CHECK_EQ(hipMemUnmap(b, G), hipSuccess);
    CHECK_EQ(hipMemAddressFree(a, G), hipSuccess);
    CHECK_EQ(hipMemAddressFree(b, G), hipSuccess);
}

/* Physical memory counts against the device's capacity, as hipMalloc's does. */
static void capacity(void)
{
    struct simdev_counters c0 = sim_counters(0);
    CHECK_EQ(c0.reserved_bytes, 0);
    hipMemAllocationProp p = prop_on(0);
    hipMemGenericAllocationHandle_t h = NULL, extra = NULL;
    CHECK_EQ(hipMemCreate(&h, 64 * MiB + G, &p, 0), hipErrorOutOfMemory);
    CHECK_EQ(hipGetLastError(), hipErrorOutOfMemory);
    CHECK_EQ(hipMemCreate(&h, 64 * MiB, &p, 0), hipSuccess);
    size_t free_bytes = 1, total = 0;
    CHECK_EQ(hipMemGetInfo(&free_bytes, &total), hipSuccess);
    CHECK_EQ(free_bytes, 0);
    CHECK_EQ(hipMemCreate(&extra, G, &p, 0), hipErrorOutOfMemory);
    void *d = NULL;
    CHECK_EQ(hipMalloc(&d, 512), hipErrorOutOfMemory);
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.reserved_bytes, 64 * MiB);
    CHECK(c.peak_reserved_bytes >= 64 * MiB);
    CHECK_EQ(c.oom - c0.oom, 3);
    CHECK_EQ(hipMemRelease(h), hipSuccess); /* never mapped: freed at once */
    CHECK_EQ(sim_counters(0).reserved_bytes, 0);
    hipGetLastError();
}

/* Each bad argument gets the code the CUDA driver and HIP headers document. */
static void bad_arguments(void)
{
    hipMemAllocationProp p = prop_on(0);
    hipMemGenericAllocationHandle_t h = NULL;
    void *r = NULL;
    CHECK_EQ(hipMemAddressReserve(&r, G / 2, 0, NULL, 0), hipErrorInvalidValue);
    CHECK_EQ(hipMemAddressReserve(&r, G, 3 * G, NULL, 0), hipErrorInvalidValue);
    CHECK_EQ(hipMemAddressReserve(&r, G, 0, NULL, 1), hipErrorInvalidValue);
    CHECK_EQ(hipMemCreate(&h, G / 2, &p, 0), hipErrorInvalidValue);
    CHECK_EQ(hipMemCreate(&h, 0, &p, 0), hipErrorInvalidValue);
    CHECK_EQ(hipMemCreate(&h, G, &p, 1), hipErrorInvalidValue);
    p.type = hipMemAllocationTypeInvalid;
    CHECK_EQ(hipMemCreate(&h, G, &p, 0), hipErrorInvalidValue);
    p = prop_on(7);
    CHECK_EQ(hipMemCreate(&h, G, &p, 0), hipErrorInvalidDevice);

    char *base = reserve(4 * G);
    h = create(2 * G);
    hipMemGenericAllocationHandle_t bogus = (hipMemGenericAllocationHandle_t)(uintptr_t)0x1234;
    CHECK_EQ(hipMemMap(base, 2 * G, 0, bogus, 0), hipErrorInvalidValue);
    CHECK_EQ(hipMemMap(base + 4096, G, 0, h, 0), hipErrorInvalidValue);
    CHECK_EQ(hipMemMap(base, 2 * G, G, h, 0), hipErrorInvalidValue);  /* past the handle */
    CHECK_EQ(hipMemMap(base + 3 * G, 2 * G, 0, h, 0), hipErrorInvalidValue); /* past the range */
    CHECK_EQ(hipMemMap(base, 2 * G, 0, h, 1), hipErrorInvalidValue);
    CHECK_EQ(hipMemMap(base, 2 * G, 0, h, 0), hipSuccess);
    CHECK_EQ(hipMemMap(base + G, G, 0, h, 0), hipErrorInvalidValue);  /* overlaps */
    CHECK_EQ(hipMemUnmap(base, G), hipErrorInvalidValue);             /* part of a mapping */
    CHECK_EQ(hipMemUnmap(base + G, G), hipErrorInvalidValue);
    CHECK_EQ(hipMemUnmap(base, 3 * G), hipErrorInvalidValue);         /* runs past it */
    CHECK_EQ(set_access(base, G, hipMemAccessFlagsProtReadWrite), hipErrorInvalidValue);
    CHECK_EQ(set_access(base, 2 * G, (hipMemAccessFlags)2), hipErrorInvalidValue);
    hipMemAccessDesc other = {{hipMemLocationTypeDevice, 7}, hipMemAccessFlagsProtReadWrite};
    CHECK_EQ(hipMemSetAccess(base, 2 * G, &other, 1), hipErrorInvalidDevice);
    other.location.type = hipMemLocationTypeInvalid;
    CHECK_EQ(hipMemSetAccess(base, 2 * G, &other, 1), hipErrorInvalidValue);
    CHECK_EQ(hipMemAddressFree(base, 4 * G), hipErrorInvalidValue);   /* still mapped */
    CHECK_EQ(hipFree(base), hipErrorInvalidDevicePointer);             /* not hipMalloc's */
    CHECK_EQ(hipMemRelease(bogus), hipErrorInvalidValue);
    CHECK_EQ(hipMemRelease(h), hipSuccess);
    CHECK_EQ(hipMemRelease(h), hipErrorInvalidValue);
    CHECK_EQ(hipMemMap(base + 2 * G, 2 * G, 0, h, 0), hipErrorInvalidValue); /* released */
    CHECK_EQ(hipMemUnmap(base, 2 * G), hipSuccess);
    CHECK_EQ(hipMemAddressFree(base, 2 * G), hipErrorInvalidValue);   /* not its size */
    CHECK_EQ(hipMemAddressFree(base + G, 3 * G), hipErrorInvalidValue);
    CHECK_EQ(hipMemAddressFree(base, 4 * G), hipSuccess);
    CHECK_EQ(hipMemAddressFree(base, 4 * G), hipErrorInvalidValue);
    CHECK_EQ(sim_counters(0).reserved_bytes, 0);
    hipGetLastError();
}

#define POSIX_FD hipMemHandleTypePosixFileDescriptor

static size_t free_memory(void)
{
    size_t f = 0, t = 0;
    CHECK_EQ(hipMemGetInfo(&f, &t), hipSuccess);
    return f;
}

static hipMemGenericAllocationHandle_t create_shareable(size_t size)
{
    hipMemAllocationProp p = prop_on(0);
    p.requestedHandleType = POSIX_FD;
    hipMemGenericAllocationHandle_t h = NULL;
    CHECK_EQ(hipMemCreate(&h, size, &p, 0), hipSuccess);
    CHECK(h != NULL);
    return h;
}

static hipError_t import_fd(hipMemGenericAllocationHandle_t *h, int fd)
{
    return hipMemImportFromShareableHandle(h, (void *)(uintptr_t)fd, POSIX_FD);
}

/* Maps h over all of a fresh reservation of `size` bytes, read-write. */
static char *map_rw(hipMemGenericAllocationHandle_t h, size_t size)
{
    char *p = reserve(size);
    CHECK_EQ(hipMemMap(p, size, 0, h, 0), hipSuccess);
    CHECK_EQ(set_access(p, size, hipMemAccessFlagsProtReadWrite), hipSuccess);
    return p;
}

/* Exported memory imported again and mapped at a second reservation: both mappings show the
 * same bytes, both ways, and the import costs no capacity. */
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
    hipMemGenericAllocationHandle_t h = create_shareable(G);
    CHECK_EQ(free_memory(), f0 - G);
    char *a = map_rw(h, G);
    CHECK_EQ(hipMemcpy(a + G - N, pat, N, hipMemcpyHostToDevice), hipSuccess); /* the end */

    int fd = -1;
    CHECK_EQ(hipMemExportToShareableHandle(&fd, h, POSIX_FD, 0), hipSuccess);
    CHECK(fd >= 0);
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    hipMemGenericAllocationHandle_t h2 = NULL;
    CHECK_EQ(import_fd(&h2, fd), hipSuccess);
    CHECK(h2 != NULL && h2 != h);
    CHECK(fcntl(fd, F_GETFD) >= 0);  /* still the caller's */
    CHECK_EQ(close(fd), 0);          /* and the import does not need it */
    CHECK_EQ(free_memory(), f0 - G); /* the exporter's memory, counted once */

    char *b = map_rw(h2, G);
    CHECK(b != a);
    CHECK_EQ(free_memory(), f0 - G);
    CHECK_EQ(hipMemcpy(back, b + G - N, N, hipMemcpyDeviceToHost), hipSuccess);
    CHECK(memcmp(back, pat, N) == 0);
    CHECK_EQ(hipMemcpy(b, pat2, N, hipMemcpyHostToDevice), hipSuccess);
    CHECK_EQ(hipMemcpy(back, a, N, hipMemcpyDeviceToHost), hipSuccess);
    CHECK(memcmp(back, pat2, N) == 0);
    CHECK_EQ(hipMemset(a + N, 0x5a, 16), hipSuccess);
    CHECK_EQ(hipMemcpy(back, b + N, 16, hipMemcpyDeviceToHost), hipSuccess);
    for (int i = 0; i < 16; i++)
        CHECK_EQ(back[i], 0x5a);

    /* A retain anywhere inside the imported mapping finds the imported handle. */
    hipMemGenericAllocationHandle_t r = NULL;
    CHECK_EQ(hipMemRetainAllocationHandle(&r, b + G / 2 + 4096), hipSuccess);
    CHECK(r == h2);
    CHECK_EQ(hipMemRelease(r), hipSuccess);

    /* The exporter's side goes first: the import keeps the bytes. */
    CHECK_EQ(hipMemUnmap(a, G), hipSuccess);
    CHECK_EQ(hipMemRelease(h), hipSuccess);
    CHECK_EQ(hipMemRelease(h), hipErrorInvalidValue);
    CHECK_EQ(hipMemcpy(back, b, N, hipMemcpyDeviceToHost), hipSuccess);
    CHECK(memcmp(back, pat2, N) == 0);
    CHECK_EQ(hipMemUnmap(b, G), hipSuccess);
    CHECK_EQ(hipMemRelease(h2), hipSuccess);
    CHECK_EQ(hipMemRelease(h2), hipErrorInvalidValue);
    CHECK_EQ(free_memory(), f0);
    CHECK_EQ(hipMemAddressFree(a, G), hipSuccess);
    CHECK_EQ(hipMemAddressFree(b, G), hipSuccess);
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.vmm_creates - c0.vmm_creates, 1);
    CHECK_EQ(c.vmm_exports - c0.vmm_exports, 1);
    CHECK_EQ(c.vmm_imports - c0.vmm_imports, 1);
    CHECK_EQ(c.vmm_releases - c0.vmm_releases, 3);
    CHECK_EQ(c.reserved_bytes, c0.reserved_bytes);
    hipGetLastError();
}

/* Retains find the mapping holding any address and add a reference that a release drops. */
static void retain(void)
{
    unsigned char buf[256], back[256];
    memset(buf, 0x3c, sizeof buf);
    size_t f0 = free_memory();
    char *base = reserve(3 * G);
    hipMemGenericAllocationHandle_t h1 = create(G), h2 = create(G), r = NULL;
    CHECK_EQ(hipMemMap(base, G, 0, h1, 0), hipSuccess);
    CHECK_EQ(hipMemMap(base + G, G, 0, h2, 0), hipSuccess);
    CHECK_EQ(set_access(base, 2 * G, hipMemAccessFlagsProtReadWrite), hipSuccess);
    CHECK_EQ(hipMemRetainAllocationHandle(&r, base + G + 12345), hipSuccess);
    CHECK(r == h2); /* the second of two mapped handles */
    r = NULL;
    CHECK_EQ(hipMemRetainAllocationHandle(&r, base), hipSuccess);
    CHECK(r == h1);
    CHECK_EQ(hipMemRelease(r), hipSuccess);
    CHECK_EQ(hipMemRelease(h1), hipSuccess);

    /* Creation and retain: two releases, and a third is refused. */
    CHECK_EQ(hipMemRelease(h2), hipSuccess);
    CHECK_EQ(hipMemRelease(h2), hipSuccess);
    CHECK_EQ(hipMemRelease(h2), hipErrorInvalidValue);
    CHECK_EQ(free_memory(), f0 - 2 * G); /* still mapped */
    CHECK_EQ(hipMemcpy(base + G, buf, sizeof buf, hipMemcpyHostToDevice), hipSuccess);
    CHECK_EQ(hipMemcpy(back, base + G, sizeof back, hipMemcpyDeviceToHost), hipSuccess);
    CHECK(memcmp(back, buf, sizeof buf) == 0);
    /* A retain names the memory again: the same handle value comes back. */
    r = NULL;
    CHECK_EQ(hipMemRetainAllocationHandle(&r, base + 2 * G - 1), hipSuccess);
    CHECK(r == h2);
    CHECK_EQ(hipMemRelease(r), hipSuccess);
    CHECK_EQ(hipMemRelease(h2), hipErrorInvalidValue);

    CHECK_EQ(hipMemRetainAllocationHandle(&r, base + 2 * G), hipErrorInvalidValue); /* unmapped */
    CHECK_EQ(hipMemRetainAllocationHandle(&r, NULL), hipErrorInvalidValue);
    CHECK_EQ(hipMemRetainAllocationHandle(&r, &r), hipErrorInvalidValue); /* host memory */
    CHECK_EQ(hipMemRetainAllocationHandle(NULL, base), hipErrorInvalidValue);
    CHECK_EQ(hipMemUnmap(base, 2 * G), hipSuccess);
    CHECK_EQ(free_memory(), f0);
    CHECK_EQ(hipMemRetainAllocationHandle(&r, base), hipErrorInvalidValue);
    CHECK_EQ(hipMemRelease(h1), hipErrorInvalidValue);
    CHECK_EQ(hipMemAddressFree(base, 3 * G), hipSuccess);
    hipGetLastError();
}

/* Every handle type but none and the POSIX descriptor, and every bad export or import. */
static void share_refusals(void)
{
    hipMemAllocationProp p = prop_on(0);
    hipMemGenericAllocationHandle_t h = NULL, s = create_shareable(G);
    int fd = -1;
    static const int unsupported[] = {hipMemHandleTypeWin32, hipMemHandleTypeWin32Kmt, 3, 8};
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++) {
        p.requestedHandleType = (hipMemAllocationHandleType)unsupported[i];
        CHECK_EQ(hipMemCreate(&h, G, &p, 0), hipErrorNotSupported);
    }
    CHECK(h == NULL);

    /* Export: only a live handle created with the type, to the type, without flags. */
    h = create(G);
    CHECK_EQ(hipMemExportToShareableHandle(&fd, h, POSIX_FD, 0), hipErrorInvalidValue);
    CHECK_EQ(hipMemRelease(h), hipSuccess);
    CHECK_EQ(hipMemExportToShareableHandle(&fd, h, POSIX_FD, 0), hipErrorInvalidValue); /* gone */
    CHECK_EQ(hipMemExportToShareableHandle(&fd, s, POSIX_FD, 1), hipErrorInvalidValue);
    CHECK_EQ(hipMemExportToShareableHandle(&fd, s, hipMemHandleTypeWin32, 0),
             hipErrorInvalidValue);
    CHECK_EQ(hipMemExportToShareableHandle(&fd, s, hipMemHandleTypeNone, 0),
             hipErrorInvalidValue);
    CHECK_EQ(hipMemExportToShareableHandle(NULL, s, POSIX_FD, 0), hipErrorInvalidValue);
    CHECK_EQ(hipMemExportToShareableHandle(&fd, NULL, POSIX_FD, 0), hipErrorInvalidValue);
    CHECK_EQ(fd, -1);

    /* Import: only a descriptor of exported memory, of the POSIX type. */
    CHECK_EQ(hipMemExportToShareableHandle(&fd, s, POSIX_FD, 0), hipSuccess);
    h = NULL;
    CHECK_EQ(hipMemImportFromShareableHandle(&h, (void *)(uintptr_t)fd, hipMemHandleTypeWin32),
             hipErrorInvalidValue);
    CHECK_EQ(import_fd(NULL, fd), hipErrorInvalidValue);
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    CHECK(null_fd >= 0);
    CHECK_EQ(import_fd(&h, null_fd), hipErrorInvalidValue);
    CHECK_EQ(close(null_fd), 0);
    CHECK_EQ(import_fd(&h, null_fd), hipErrorInvalidValue); /* closed */
    CHECK_EQ(import_fd(&h, -1), hipErrorInvalidValue);
    CHECK_EQ(hipMemImportFromShareableHandle(&h, (void *)((uintptr_t)1 << 40), POSIX_FD),
             hipErrorInvalidValue);
    int pipe_fd[2];
    CHECK_EQ(pipe(pipe_fd), 0);
    CHECK_EQ(import_fd(&h, pipe_fd[0]), hipErrorInvalidValue);
    CHECK_EQ(close(pipe_fd[0]), 0);
    CHECK_EQ(close(pipe_fd[1]), 0);
    CHECK(h == NULL);
    CHECK_EQ(import_fd(&h, fd), hipSuccess); /* the good one still imports */
    CHECK_EQ(close(fd), 0);
    CHECK_EQ(hipMemRelease(h), hipSuccess);

    /* An offset into the handle is refused even where the mapping lies within it (ROCm's
     * argument check); at offset 0 the handle maps. */
    hipMemGenericAllocationHandle_t big = create(2 * G);
    char *base = reserve(2 * G);
    CHECK_EQ(hipMemMap(base, G, G, big, 0), hipErrorInvalidValue);
    CHECK_EQ(hipMemMap(base, 2 * G, 0, big, 0), hipSuccess);
    CHECK_EQ(hipMemUnmap(base, 2 * G), hipSuccess);
    CHECK_EQ(hipMemRelease(big), hipSuccess);
    CHECK_EQ(hipMemAddressFree(base, 2 * G), hipSuccess);
    CHECK_EQ(hipMemRelease(s), hipSuccess);
    CHECK_EQ(sim_counters(0).reserved_bytes, 0);
    hipGetLastError();
}

/* hipMemGetAddressRange answers the one mapping holding an address, not its reservation, and
 * hipPointerGetAttributes calls it device memory of its device, as hipMalloc memory. */
static void address_range(void)
{
    char *base = reserve(4 * G);
    hipMemGenericAllocationHandle_t h1 = create(G), h2 = create(2 * G);
    CHECK_EQ(hipMemMap(base, G, 0, h1, 0), hipSuccess);
    CHECK_EQ(hipMemMap(base + G, 2 * G, 0, h2, 0), hipSuccess);
    CHECK_EQ(set_access(base, 3 * G, hipMemAccessFlagsProtReadWrite), hipSuccess);
    void *b = NULL;
    size_t n = 0;
    CHECK_EQ(hipMemGetAddressRange(&b, &n, base + G + G / 2 + 77), hipSuccess);
    CHECK(b == base + G);
    CHECK_EQ(n, 2 * G);
    CHECK_EQ(hipMemGetAddressRange(&b, &n, base + G), hipSuccess); /* its first byte */
    CHECK(b == base + G);
    CHECK_EQ(n, 2 * G);
    CHECK_EQ(hipMemGetAddressRange(&b, &n, base + G - 1), hipSuccess); /* the first's last */
    CHECK(b == base);
    CHECK_EQ(n, G);
    CHECK_EQ(hipMemGetAddressRange(NULL, &n, base + 3 * G - 1), hipSuccess);
    CHECK_EQ(n, 2 * G);
    b = NULL;
    n = 1;
    CHECK_EQ(hipMemGetAddressRange(&b, &n, base + 3 * G), hipErrorInvalidValue); /* unmapped */
    CHECK(b == NULL);
    hipPointerAttribute_t at;
    CHECK_EQ(hipPointerGetAttributes(&at, base + 2 * G), hipSuccess);
    CHECK_EQ(at.memoryType, hipMemoryTypeDevice);
    CHECK_EQ(at.device, 0);
    CHECK(at.devicePointer == base + 2 * G);
    /* hipMalloc memory: the allocation, as before. */
    char *d = NULL;
    CHECK_EQ(hipMalloc((void **)&d, 3000), hipSuccess);
    CHECK_EQ(hipMemGetAddressRange(&b, &n, d + 2999), hipSuccess);
    CHECK(b == d);
    CHECK_EQ(n, 3000);
    CHECK_EQ(hipFree(d), hipSuccess);
    CHECK_EQ(hipMemUnmap(base, 3 * G), hipSuccess);
    CHECK_EQ(hipMemGetAddressRange(&b, &n, base + G), hipErrorInvalidValue);
    CHECK_EQ(hipMemRelease(h1), hipSuccess);
    CHECK_EQ(hipMemRelease(h2), hipSuccess);
    CHECK_EQ(hipMemAddressFree(base, 4 * G), hipSuccess);
    CHECK_EQ(sim_counters(0).reserved_bytes, 0);
    hipGetLastError();
}

/* Runs `op` against a mapping and expects one fault line naming `why`, the sticky 700 until
 * hipDeviceReset, which also drops the device's handles and mappings. */
static void expect_fault(const char *why, char *at, int write)
{
    static unsigned char buf[256];
    struct simdev_counters c0 = sim_counters(0);
    FILE *tmp;
    int saved = capture_stderr(&tmp);
    if (write)
        CHECK_EQ(hipMemset(at, 0, sizeof buf), hipSuccess);
    else
        CHECK_EQ(hipMemcpyAsync(buf, at, sizeof buf, hipMemcpyDeviceToHost, 0), hipSuccess);
    CHECK_EQ(hipDeviceSynchronize(), hipErrorIllegalAddress);
    CHECK_EQ(release_stderr(tmp, saved, why), 1);
    CHECK_EQ(sim_counters(0).faults - c0.faults, 1);
    void *d = NULL;
    CHECK_EQ(hipMalloc(&d, 16), hipErrorIllegalAddress);
    CHECK_EQ(hipMemUnmap(at, G), hipErrorIllegalAddress);
    CHECK_EQ(hipGetLastError(), hipErrorIllegalAddress);
    CHECK_EQ(hipDeviceReset(), hipSuccess);
    CHECK_EQ(hipGetLastError(), hipSuccess);
}

static void faults(void)
{
    /* Mapped, no access yet. */
    char *base = reserve(2 * G);
    hipMemGenericAllocationHandle_t h = create(G);
    CHECK_EQ(hipMemMap(base, G, 0, h, 0), hipSuccess);
    expect_fault("(mapped memory without access)", base, 1);
    /* The reset dropped the handle and its mapping; the reservation stays. */
    CHECK_EQ(sim_counters(0).reserved_bytes, 0);
    CHECK_EQ(hipMemRelease(h), hipErrorInvalidValue);
    expect_fault("(unmapped memory)", base + 128, 0);

    /* Accessible, then unmapped. */
    h = create(G);
    CHECK_EQ(hipMemMap(base + G, G, 0, h, 0), hipSuccess);
    CHECK_EQ(set_access(base + G, G, hipMemAccessFlagsProtReadWrite), hipSuccess);
    CHECK_EQ(hipMemset(base + G, 1, G), hipSuccess);
    CHECK_EQ(hipDeviceSynchronize(), hipSuccess);
    CHECK_EQ(hipMemRelease(h), hipSuccess);
    CHECK_EQ(hipMemUnmap(base + G, G), hipSuccess);
    CHECK_EQ(sim_counters(0).reserved_bytes, 0);
    expect_fault("(unmapped memory)", base + G, 1);
    /* A copy running into the unmapped half faults too. */
    h = create(G);
    CHECK_EQ(hipMemMap(base, G, 0, h, 0), hipSuccess);
    CHECK_EQ(set_access(base, G, hipMemAccessFlagsProtReadWrite), hipSuccess);
    CHECK_EQ(hipMemset(base, 2, G), hipSuccess);
    CHECK_EQ(hipDeviceSynchronize(), hipSuccess);
    expect_fault("(unmapped memory)", base + G - 128, 0);

    /* Read-only: reads work, writes fault. */
    h = create(G);
    CHECK_EQ(hipMemMap(base, G, 0, h, 0), hipSuccess);
    CHECK_EQ(set_access(base, G, hipMemAccessFlagsProtRead), hipSuccess);
    unsigned char one = 1;
    CHECK_EQ(hipMemcpy(&one, base, 1, hipMemcpyDeviceToHost), hipSuccess);
    CHECK_EQ(one, 0);
    expect_fault("(write to read-only mapped memory)", base, 1);
    CHECK_EQ(hipMemAddressFree(base, 2 * G), hipSuccess);
}

int main(void)
{
    sim_begin("simdevice hip");
    granularity();
    data();
    adjacent_reservations();
    capacity();
    bad_arguments();
    share_round_trip();
    retain();
    share_refusals();
    address_range();
    faults();
    printf("hip_vmm: all passed\n");
    return 0;
}
