/* ipc.c: a block the cache handed out, exported to another process. Under the cache two small
 * blocks share one driver allocation, so a CUDA handle (which names the whole driver
 * allocation) of the second block would open, in the importer, at the first block's bytes.
 * Whatever happens, the importer must never see another block's bytes: the export either
 * works (the importer sees the block's own bytes, and the exporter sees what it writes back)
 * or fails with the documented code. A block that starts its own segment exports as it is;
 * later blocks of a process that exported one must export correctly. The importer is this program again (ipc_peer.h), with the cache preloaded
 * (argument "shim") or without it ("plain"); it must also find that imported memory is never
 * the cache's: freeing it is the runtime's own refusal, closing it works.
 * Mode "ucx" follows UCX's cuda_ipc transport (and CUDA-aware MPI over it): the range of a
 * small block is queried, the range's base exported, and the importer reads and writes at the
 * base plus the block's offset. Under the cache the base is the segment's, which another block
 * starts: the export must work and the importer see the block's own bytes.
 * Mode "ucx-far" does the same with a block far into what the driver allocated or mapped.
 * With IPC_ALL_EXPORTED set (the cache with expandable segments) no export may be refused. */
#include "gpu_ipc.h"
#include "ipc_peer.h"

#define SIZE 4096
#define BIG (16 << 20) /* a large block: a segment of its own */
#define BIG_FREED (40 << 20)

static unsigned char byte_of(int seed, size_t i)
{
    return (unsigned char)(seed + i * 3);
}

static void fill(void *d, int seed)
{
    unsigned char h[SIZE];
    for (size_t i = 0; i < SIZE; i++)
        h[i] = byte_of(seed, i);
    CHECK(gpuMemcpy(d, h, SIZE, gpuMemcpyDefault));
}

/* The seed whose pattern the SIZE bytes at d hold, or -1. */
static int seed_of(const void *d)
{
    unsigned char h[SIZE];
    CHECK(gpuMemcpy(h, d, SIZE, gpuMemcpyDefault));
    int seed = h[0];
    for (size_t i = 0; i < SIZE; i++)
        if (h[i] != byte_of(seed, i))
            return -1;
    return seed;
}

/* The importer: the handle must open at the bytes of pattern `want` (at `offset` into the
 * exported range: "want@offset"). It writes `want + 1` there. */
static int importer(const char *hex, const char *arg)
{
    gpuIpcMemHandle_t h;
    void *base = NULL;
    int want = atoi(arg);
    const char *at = strchr(arg, '@');
    size_t offset = at ? (size_t)strtoull(at + 1, NULL, 10) : 0;
    EXPECT(ipc_peer_unhex(hex, &h) == 0);
    CHECK(gpuIpcOpenMemHandle(&base, h));
    void *p = (char *)base + offset;
    int seen = seed_of(p);
    if (seen != want) {
        fprintf(stderr, "importer: expected the exported block's bytes (pattern %d), saw %s %d\n",
                want, seen < 0 ? "no pattern" : "another block's, pattern", seen);
        return 3;
    }
    fill(p, want + 1);
    EXPECT(gpuFree(base) != gpuSuccess); /* the runtime's refusal: never the cache's block */
    CHECK(gpuIpcCloseMemHandle(base));
    return 0;
}

/* UCX's pattern: query the block's range, export its base, send the offset. */
static int ucx_pattern(void)
{
    void *a = NULL, *b = NULL, *base = NULL;
    size_t size = 0;
    CHECK(gpuMalloc(&a, SIZE));
    CHECK(gpuMalloc(&b, SIZE));
    fill(a, 10);
    fill(b, 20);
    CHECK(gpuMemGetAddressRange(&base, &size, b));
    size_t offset = (size_t)((char *)b - (char *)base);
    EXPECT((char *)b >= (char *)base && offset + SIZE <= size);
    gpuIpcMemHandle_t h;
    CHECK(gpuIpcGetMemHandle(&h, base));
    char arg[48];
    snprintf(arg, sizeof arg, "20@%zu", offset);
    EXPECT(ipc_peer_run("shim", &h, arg, 0) == 0);
    EXPECT(seed_of(b) == 21); /* what the importer wrote, where it belongs */
    EXPECT(seed_of(a) == 10);
    CHECK(gpuFree(a));
    CHECK(gpuFree(b));
    puts("ipc: the range's base exported, the block read and written at its offset");
    return 0;
}

/* UCX's pattern where the block lies far into what the driver allocated or mapped: a 16 MiB
 * block freed into the cache, then blocks of 2, 4 and 2 MiB carved from it; the last one's
 * range is queried and exported. With expandable segments the 16 MiB were one driver
 * mapping, so the driver's range of the last block is that mapping, whose base starts the
 * first block: the cache must answer the block itself. */
static int ucx_far(void)
{
    void *x = NULL, *a = NULL, *fill_block = NULL, *b = NULL, *base = NULL;
    size_t size = 0;
    CHECK(gpuMalloc(&x, 16 << 20));
    CHECK(gpuFree(x));
    CHECK(gpuMalloc(&a, 2 << 20));
    CHECK(gpuMalloc(&fill_block, 4 << 20));
    CHECK(gpuMalloc(&b, 2 << 20));
    fill(a, 10);
    fill(b, 20);
    CHECK(gpuMemGetAddressRange(&base, &size, b));
    size_t offset = (size_t)((char *)b - (char *)base);
    EXPECT((char *)b >= (char *)base && offset + (2 << 20) <= size);
#ifdef GPU_DRIVER
    /* What UCX asks before it picks the IPC lane, and the range by attribute: as the range. */
    unsigned capable = 0;
    CUdeviceptr start = 0;
    size_t n = 0;
    CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                                   CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                   CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *data[] = {&capable, &start, &n};
    CHECK(cuPointerGetAttributes(3, which, data, gpu_dptr(b)));
    printf("ipc: legacy IPC capable %u, range by attribute %s\n", capable,
           start == gpu_dptr(base) && n == size ? "the same" : "another");
    capable = 0;
    CHECK(cuPointerGetAttribute(&capable, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                                gpu_dptr(b)));
    printf("ipc: legacy IPC capable (one attribute) %u\n", capable);
#endif
    gpuIpcMemHandle_t h;
    CHECK(gpuIpcGetMemHandle(&h, base));
    char arg[48];
    snprintf(arg, sizeof arg, "20@%zu", offset);
    EXPECT(ipc_peer_run("shim", &h, arg, 0) == 0);
    EXPECT(seed_of(b) == 21);
    EXPECT(seed_of(a) == 10);
    CHECK(gpuFree(a));
    CHECK(gpuFree(fill_block));
    CHECK(gpuFree(b));
    puts("ipc: a block far into its driver allocation, exported by its range and read back");
    return 0;
}

/* Exports the block at d (pattern `seed`) and has another process check it. Returns 1 when
 * the export was refused with the documented code and last error. */
static int export_checked(void *d, int seed, int plain_importer)
{
    gpuIpcMemHandle_t h;
    gpuError_t e = gpuIpcGetMemHandle(&h, d);
    if (e != gpuSuccess) {
        EXPECT(e == GPU_IPC_REFUSED);
        EXPECT(!GPU_HAS_LAST_ERROR || gpuGetLastError() == GPU_IPC_REFUSED);
        EXPECT(seed_of(d) == seed); /* the block is untouched */
        return 1;
    }
    char want[8];
    snprintf(want, sizeof want, "%d", seed);
    EXPECT(ipc_peer_run(plain_importer ? "plain" : "shim", &h, want, plain_importer) == 0);
    EXPECT(seed_of(d) == seed + 1); /* what the importer wrote */
    return 0;
}

/* Run on a 64 MiB device: after the process's first export, a block freed into the cache must
 * not make the device look full to the plain allocations that no longer come from the cache. */
static int device_full_after_export(void)
{
    void *x = NULL, *a = NULL, *b = NULL, *y = NULL;
    gpuIpcMemHandle_t h;
    CHECK(gpuMalloc(&x, BIG_FREED));
    CHECK(gpuMalloc(&a, SIZE));
    CHECK(gpuMalloc(&b, SIZE));
    if (gpuIpcGetMemHandle(&h, b) != gpuSuccess)
        (void)gpuGetLastError();
    CHECK(gpuFree(x));
    CHECK(gpuMalloc(&y, BIG_FREED));
    CHECK(gpuFree(y));
    CHECK(gpuFree(a));
    CHECK(gpuFree(b));
    puts("ipc: a block freed after the export made room for a passthrough allocation");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4)
        return importer(argv[2], argv[3]);
    if (argc > 1 && strcmp(argv[1], "full") == 0)
        return device_full_after_export();
    if (argc > 1 && strcmp(argv[1], "ucx") == 0)
        return ucx_pattern();
    if (argc > 1 && strcmp(argv[1], "ucx-far") == 0)
        return ucx_far();
    int plain_importer = argc > 1 && strcmp(argv[1], "plain") == 0;
    void *a = NULL, *b = NULL, *c = NULL, *big = NULL;
    CHECK(gpuMalloc(&a, SIZE));
    CHECK(gpuMalloc(&b, SIZE));
    CHECK(gpuMalloc(&big, BIG));
    fill(a, 10);
    fill(b, 20);
    fill(big, 40);
    /* The first block of its own segment: the handle names what the block is, bytes and all. */
    EXPECT(!export_checked(big, 40, plain_importer));
    int refused = export_checked(b, 20, plain_importer);
#ifdef GPU_HIP
    EXPECT(!refused); /* ROCm's handle carries the block's offset: nothing to refuse */
#endif
    /* Expandable segments: every live block exports, as the cache's record. */
    EXPECT(!refused || getenv("IPC_ALL_EXPORTED") == NULL);
    /* A block made after the first export is exportable whatever the first answer was. */
    CHECK(gpuMalloc(&c, SIZE));
    fill(c, 30);
    EXPECT(!export_checked(c, 30, plain_importer));
    EXPECT(seed_of(a) == 10);
    CHECK(gpuFree(a));
    CHECK(gpuFree(b));
    CHECK(gpuFree(c));
    CHECK(gpuFree(big));
    printf("ipc: block %s, later block exported\n", refused ? "refused" : "exported");
    return 0;
}
