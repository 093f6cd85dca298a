/* drv_exports.c: the undocumented export tables NVIDIA's runtime refuses to start without, and
 * the integrity check's answers, recomputed here from the layout in shared/cuda-driver.md
 * (with md2.c compiled in, itself checked against RFC 1319's vectors first). Run with
 * SIMDEV_DEVICES=2, so the hash covers more than one device. */
#include <pthread.h>
#include <time.h>

#include "driver/md2.h"
#include "drv_check.h"

typedef CUresult (*integrity_fn)(unsigned version, uint64_t unix_seconds, uint64_t out[2]);
typedef CUresult (*primary_fn)(CUcontext *out, CUdevice dev);
typedef CUresult (*kv_put_fn)(CUcontext ctx, void *key, void *value, void *dtor);
typedef CUresult (*kv_delete_fn)(CUcontext ctx, void *key);
typedef CUresult (*kv_get_fn)(void **value, CUcontext ctx, void *key);

/* The ids as 16 bytes in memory order, and the table's size word (0: it has none). */
static const struct {
    unsigned char id[16];
    size_t entries;
} tables[] = {
    {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9},
     13},
    {{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66},
     7},
    {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc},
     4},
    {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93},
     0},
    {{0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e},
     4},
    {{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2},
     3},
};
enum { CUDART, HOOKS, TOOLS_TLS, STORAGE, CHECKS, INTEGRITY, NTABLES };

static const uint8_t key[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};

static const CUuuid *id_of(int which)
{
    return (const CUuuid *)(const void *)tables[which].id;
}

static void *const *table(int which)
{
    const void *t = NULL;
    CU_OK(cuGetExportTable(&t, id_of(which)));
    CHECK(t != NULL);
    return t;
}

/* Entry i of a table as a function pointer of the caller's type. */
#define ENTRY(type, t, i) ((type)(uintptr_t)(t)[i])

static void hex_is(const uint8_t d[16], const char *want)
{
    char got[33];
    for (int i = 0; i < 16; i++)
        snprintf(got + 2 * i, 3, "%02x", d[i]);
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "FAIL: digest %s, expected %s\n", got, want);
        check_failed();
    }
}

/* The hash below is only as good as md2.c: check it against published values first. */
static void md2_vectors(void)
{
    uint8_t d[16], msg[76];
    md2("", 0, d);
    hex_is(d, "8350e5a3e24c153df2275c9f80692773");
    md2("abc", 3, d);
    hex_is(d, "da853b0d3f88d99b30283a69e6ded6bb");
    for (int i = 0; i < 76; i++)
        msg[i] = (uint8_t)(7 * i + 3);
    hmac_md2(key, msg, sizeof msg, d);
    hex_is(d, "ec265ba396aa5f31104fd9913d5ffa6e");
}

static void lookups(void)
{
    for (int i = 0; i < NTABLES; i++) {
        void *const *t = table(i);
        if (tables[i].entries)
            CHECK_EQ((uintptr_t)t[0], tables[i].entries * sizeof(void *));
    }
    CUuuid unknown;
    memcpy(&unknown, tables[CUDART].id, sizeof unknown);
    unknown.bytes[15] ^= 1;
    const void *t = &t;
    CHECK(cuGetExportTable(&t, &unknown) != CUDA_SUCCESS);
    CHECK_EQ(cuGetExportTable(NULL, id_of(CUDART)), CUDA_ERROR_INVALID_VALUE);
}

/* cudart interface [2] is how the runtime finds a device's primary context. */
static void primary_context(void)
{
    CUcontext c = NULL, retained = NULL;
    CU_OK(ENTRY(primary_fn, table(CUDART), 2)(&c, 1));
    CU_OK(cuDevicePrimaryCtxRetain(&retained, 1));
    CHECK(c == retained);
    CHECK_EQ(ENTRY(primary_fn, table(CUDART), 2)(&c, 2), CUDA_ERROR_INVALID_DEVICE);
    CU_OK(cuDevicePrimaryCtxRelease(1));
}

/* Context-local storage: the runtime keeps its per-context state here; a miss is an error. */
static void storage(void)
{
    void *const *t = table(STORAGE);
    CUcontext c = drv_use_primary(0);
    static int k1, k2, v1, v2;
    void *v = NULL;
    CHECK_EQ(ENTRY(kv_get_fn, t, 2)(&v, c, &k1), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(ENTRY(kv_put_fn, t, 0)(c, &k1, &v1, NULL));
    CU_OK(ENTRY(kv_put_fn, t, 0)(NULL, &k2, &v2, NULL)); /* NULL: the current context */
    CU_OK(ENTRY(kv_get_fn, t, 2)(&v, NULL, &k1));
    CHECK(v == &v1);
    CU_OK(ENTRY(kv_get_fn, t, 2)(&v, c, &k2));
    CHECK(v == &v2);
    CU_OK(ENTRY(kv_delete_fn, t, 1)(c, &k1));
    CHECK_EQ(ENTRY(kv_get_fn, t, 2)(&v, c, &k1), CUDA_ERROR_INVALID_HANDLE);
    CU_OK(cuDevicePrimaryCtxRelease(0));
}

static void put(unsigned char **p, const void *v, size_t n)
{
    memcpy(*p, v, n);
    *p += n;
}

/* HMAC-MD2 over the 48-byte header and each device's 28 bytes, for the calling thread. */
static void expected_mac(unsigned version, uint64_t seconds, uint8_t out[16])
{
    unsigned char msg[48 + 28 * 2], *p = msg;
    int ndev = 0, drv = 0;
    CU_OK(cuDeviceGetCount(&ndev));
    CHECK_EQ(ndev, 2);
    CU_OK(cuDriverGetVersion(&drv));
    void *const *it = table(INTEGRITY);
    uint32_t u32[4] = {(uint32_t)drv, version, (uint32_t)getpid(), (uint32_t)pthread_self()};
    uint64_t u64[4] = {(uintptr_t)table(CUDART), (uintptr_t)it, (uintptr_t)it[1], seconds};
    put(&p, u32, sizeof u32);
    put(&p, u64, sizeof u64);
    for (CUdevice d = 0; d < ndev; d++) {
        CUuuid u;
        int32_t pci[3];
        CU_OK(cuDeviceGetUuid(&u, d));
        CU_OK(cuDeviceGetAttribute(&pci[0], CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d));
        CU_OK(cuDeviceGetAttribute(&pci[1], CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d));
        CU_OK(cuDeviceGetAttribute(&pci[2], CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d));
        put(&p, &u, sizeof u);
        put(&p, pci, sizeof pci);
    }
    CHECK_EQ(p - msg, sizeof msg);
    hmac_md2(key, msg, sizeof msg, out);
}

static void *integrity_in_thread(void *seconds)
{
    uint64_t out[2] = {0}, s = *(uint64_t *)seconds;
    uint8_t want[16];
    CU_OK(ENTRY(integrity_fn, table(INTEGRITY), 1)(13002, s, out));
    expected_mac(13002, s, want);
    CHECK(memcmp(out, want, 16) == 0);
    return NULL;
}

static void integrity(void)
{
    integrity_fn check = ENTRY(integrity_fn, table(INTEGRITY), 1);
    uint64_t out[2] = {0}, first[2];
    CU_OK(check(13000, 0, out));
    CHECK(out[0] == 0x3341181C03CB675CULL && out[1] == 0x8ED383AA1F4CD1E8ULL);
    CU_OK(check(13001, 0, out));
    CHECK(out[0] == 0x1841181C03CB675CULL && out[1] == 0x8ED383AA1F4CD1E8ULL);
    uint64_t seconds = (uint64_t)time(NULL);
    uint8_t want[16];
    CU_OK(check(13002, seconds, out));
    expected_mac(13002, seconds, want);
    CHECK(memcmp(out, want, 16) == 0);
    memcpy(first, out, sizeof first);
    /* The time is part of the message; so is the calling thread. */
    CU_OK(check(13002, seconds + 1, out));
    CHECK(memcmp(out, first, 16) != 0);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, integrity_in_thread, &seconds) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_EQ(check(13002, seconds, NULL), CUDA_ERROR_INVALID_VALUE);
}

int main(void)
{
    drv_begin();
    md2_vectors();
    lookups();
    primary_context();
    storage();
    integrity();
    printf("drv_exports: all passed\n");
    return 0;
}
