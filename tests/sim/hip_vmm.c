/* hip_vmm.c: the HIP stand-in's virtual memory management: granularity; data through mappings,
 * across two mappings (and two adjacent reservations), one handle seen at two addresses;
 * capacity; faults before set-access, after unmap and on read-only mappings; release + unmap
 * and device reset returning the memory; the documented error for each bad argument.
 * Run with SIMDEV_MEMORY=64M and one device. */
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
    faults();
    printf("hip_vmm: all passed\n");
    return 0;
}
