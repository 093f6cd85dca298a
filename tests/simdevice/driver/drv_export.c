/* drv_export.c: the six undocumented export tables NVIDIA's runtime asks cuGetExportTable for,
 * with just the behaviour it needs (shared/cuda-driver.md has the measured facts). Entries
 * that the runtime was never seen to call answer CUDA_ERROR_NOT_SUPPORTED and log the call. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "drv.h"
#include "md2.h"

/* An entry the runtime was not seen to call. */
static CUresult unexpected(void)
{
    sd_log("driver: an export-table entry that is not modelled was called");
    return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult ok(void)
{
    return CUDA_SUCCESS;
}

/* cudart interface [2]: the primary context of a device, without retaining it. */
static CUresult primary_of(CUcontext *out, CUdevice dev)
{
    if (!out || dev < 0 || dev >= drv_device_count())
        return CUDA_ERROR_INVALID_DEVICE;
    *out = drv_primary(dev);
    return CUDA_SUCCESS;
}

/* Entry 0 of most tables is the table's size in bytes, stored where a pointer would be. */
#define SIZE_WORD(n) ((drv_fn)(uintptr_t)((n) * sizeof(drv_fn)))
#define F(f) ((drv_fn)(f))
#define U F(unexpected)

static const drv_fn cudart_table[13] = {SIZE_WORD(13), U, F(primary_of), U, U, U, U, U,
                                       U, U, U, U, U};

/* Tools hooks [2] and [6]: zeroed buffers the runtime's tool support writes into. */
static unsigned char hook_buf2[1024], hook_buf6[14];

static CUresult hook2(void **buf, size_t *size)
{
    *buf = hook_buf2;
    if (size)
        *size = sizeof hook_buf2;
    return CUDA_SUCCESS;
}

static CUresult hook6(void **buf, size_t *size)
{
    *buf = hook_buf6;
    if (size)
        *size = sizeof hook_buf6;
    return CUDA_SUCCESS;
}

static const drv_fn hooks_table[7] = {SIZE_WORD(7), U, F(hook2), U, U, U, F(hook6)};
static const drv_fn tools_tls_table[4] = {SIZE_WORD(4), U, U, U};

/* Context-local storage: one small map per context, keyed by the runtime's key. The runtime
 * reads it on every call (twice per cudaMalloc), from every thread: reads take no lock, as the
 * real driver's cannot afford one either. A node, once published, stays in its list (a delete
 * only marks it empty; a later put of the key reuses it), so a reader never follows a freed
 * node; the keys a runtime uses are few. */
struct drv_kv {
    struct drv_kv *next;          /* published with release, read with acquire */
    void *key;                    /* fixed once published                      */
    void *value;                  /* atomic                                    */
    int live;                     /* atomic; 0: deleted                        */
};
static pthread_mutex_t kv_lock = PTHREAD_MUTEX_INITIALIZER;

static struct drv_ctx *kv_ctx(CUcontext ctx)
{
    if (!ctx)
        ctx = drv_current();
    return drv_ctx_valid(ctx) ? ctx : NULL;
}

/* The node of key, or the slot at the list's end where one would go. */
static struct drv_kv **kv_find(struct drv_ctx *c, void *key)
{
    struct drv_kv **p = &c->storage;
    struct drv_kv *n;
    while ((n = __atomic_load_n(p, __ATOMIC_ACQUIRE)) && n->key != key)
        p = &n->next;
    return p;
}

static CUresult kv_put(CUcontext ctx, void *key, void *value, void *dtor)
{
    (void)dtor;
    struct drv_ctx *c = kv_ctx(ctx);
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&kv_lock);
    struct drv_kv **p = kv_find(c, key), *n = *p;
    CUresult rc = CUDA_SUCCESS;
    if (n) {
        __atomic_store_n(&n->value, value, __ATOMIC_RELAXED);
        __atomic_store_n(&n->live, 1, __ATOMIC_RELEASE);
    } else if ((n = calloc(1, sizeof *n))) {
        n->key = key;
        n->value = value;
        n->live = 1;
        __atomic_store_n(p, n, __ATOMIC_RELEASE);
    } else {
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_unlock(&kv_lock);
    return rc;
}

static CUresult kv_delete(CUcontext ctx, void *key)
{
    struct drv_ctx *c = kv_ctx(ctx);
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&kv_lock);
    struct drv_kv *n = *kv_find(c, key);
    if (n)
        __atomic_store_n(&n->live, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&kv_lock);
    return CUDA_SUCCESS;
}

static CUresult kv_get(void **value, CUcontext ctx, void *key)
{
    struct drv_ctx *c = kv_ctx(ctx);
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct drv_kv *n = __atomic_load_n(kv_find(c, key), __ATOMIC_ACQUIRE);
    bool live = n && __atomic_load_n(&n->live, __ATOMIC_ACQUIRE);
    if (live)
        *value = __atomic_load_n(&n->value, __ATOMIC_RELAXED);
    return live ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static const drv_fn storage_table[4] = {F(kv_put), F(kv_delete), F(kv_get), U};

/* Context checks [2]: nothing to report about a context. */
static CUresult ctx_check(CUcontext ctx, unsigned *out, void **out2)
{
    (void)ctx;
    if (out)
        *out = 0;
    if (out2)
        *out2 = NULL;
    return CUDA_SUCCESS;
}

static const drv_fn checks_table[4] = {SIZE_WORD(4), U, F(ctx_check), F(ok)};

static CUresult integrity(unsigned version, uint64_t unix_seconds, uint64_t out[2]);
static const drv_fn integrity_table[3] = {SIZE_WORD(3), F(integrity), U};

static const uint8_t integrity_key[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                          0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};

static void put32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

static void put64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

/* The runtime's proof that it talks to a real driver: fixed answers for versions ending in
 * 0 and 1, otherwise HMAC-MD2 over the process, thread, tables and each device's identity. */
static CUresult integrity(unsigned version, uint64_t unix_seconds, uint64_t out[2])
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    if (version % 10 == 0) {
        out[0] = 0x3341181C03CB675CULL;
        out[1] = 0x8ED383AA1F4CD1E8ULL;
        return CUDA_SUCCESS;
    }
    if (version % 10 == 1) {
        out[0] = 0x1841181C03CB675CULL;
        out[1] = 0x8ED383AA1F4CD1E8ULL;
        return CUDA_SUCCESS;
    }
    int ndev = drv_device_count();
    size_t n = 48 + 28 * (size_t)ndev;
    unsigned char *m = calloc(1, n);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    put32(m, DRV_VERSION);
    put32(m + 4, version);
    put32(m + 8, (uint32_t)getpid());
    put32(m + 12, (uint32_t)pthread_self());
    put64(m + 16, (uint64_t)(uintptr_t)cudart_table);
    put64(m + 24, (uint64_t)(uintptr_t)integrity_table);
    put64(m + 32, (uint64_t)(uintptr_t)drv_fn_ptr(F(integrity)));
    put64(m + 40, unix_seconds);
    for (int d = 0; d < ndev; d++) {
        unsigned char *p = m + 48 + 28 * (size_t)d;
        CUuuid u;
        int domain = 0, bus = 0, slot = 0;
        cuDeviceGetUuid_v2(&u, d);
        cuDeviceGetAttribute(&domain, 50, d);
        cuDeviceGetAttribute(&bus, 33, d);
        cuDeviceGetAttribute(&slot, 34, d);
        memcpy(p, u.bytes, 16);
        put32(p + 16, (uint32_t)domain);
        put32(p + 20, (uint32_t)bus);
        put32(p + 24, (uint32_t)slot);
    }
    uint8_t mac[16];
    hmac_md2(integrity_key, m, n, mac);
    free(m);
    memcpy(out, mac, 16);
    return CUDA_SUCCESS;
}

struct table {
    unsigned char id[16];
    const void *table;
};

static const struct table tables[] = {
    {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9},
     cudart_table},
    {{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66},
     hooks_table},
    {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc},
     tools_tls_table},
    {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93},
     storage_table},
    {{0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e},
     checks_table},
    {{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2},
     integrity_table},
};

const void *drv_export_table(const unsigned char id[16])
{
    for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
        if (memcmp(tables[i].id, id, 16) == 0)
            return tables[i].table;
    return NULL;
}

/* Hands out one of the export tables above; any other id is CUDA_ERROR_INVALID_VALUE. */
API CUresult cuGetExportTable(const void **table, const void *id)
{
    if (!table || !id)
        return CUDA_ERROR_INVALID_VALUE;
    *table = drv_export_table(id);
    if (!*table) {
        const unsigned char *b = id;
        sd_log("driver: export table %02x%02x%02x%02x-... not modelled", b[0], b[1], b[2], b[3]);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
