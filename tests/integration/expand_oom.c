/* The out-of-memory that PyTorch's Note [Expandable Segments] describes, on a 1 GiB device:
 * 150 blocks of 6 MiB, then every block but one in three freed. The cache holds 600 MiB free,
 * in pieces of at most 12 MiB, and a 160 MiB request fits none of them.
 *
 * With argument "plain" (CACHEALLOC_EXPANDABLE=0) the request fails: no segment is wholly
 * free, so none can go back, and the device has no 160 MiB left. That is the failure this test
 * exists for; cudaMemGetInfo does not promise the request (the free memory it reports is what
 * one allocation can get, not the holes). Otherwise (CACHEALLOC_EXPANDABLE=1) the arena unmaps the freed blocks' mappings
 * between the live blocks and maps the request at the end of its range: it succeeds, every page of it is
 * usable, the live blocks keep their contents, and the program's last error stays clean. */
#include "gpu.h"

#define MIB ((size_t)1 << 20)
#define PAGE (2 * MIB)
#define N 150
#define BLOCK (6 * MIB)
#define BIG (160 * MIB)

/* One byte at each end of a live block: enough to see it lose its memory. */
static void mark(char *p, int i)
{
    CHECK(gpuMemset(p, i & 0xff, 1));
    CHECK(gpuMemset(p + BLOCK - 1, (i + 1) & 0xff, 1));
}

static int marked(char *p, int i)
{
    unsigned char head = 0, tail = 0;
    CHECK(gpuMemcpy(&head, p, 1, gpuMemcpyDefault));
    CHECK(gpuMemcpy(&tail, p + BLOCK - 1, 1, gpuMemcpyDefault));
    return head == (i & 0xff) && tail == ((i + 1) & 0xff);
}

int main(int argc, char **argv)
{
    int plain = argc > 1 && strcmp(argv[1], "plain") == 0;
    char *b[N];
    for (int i = 0; i < N; i++) {
        CHECK(gpuMalloc((void **)&b[i], BLOCK));
        mark(b[i], i);
    }
    for (int i = 0; i < N; i++)
        if (i % 3 != 1)
            CHECK(gpuFree(b[i]));
    size_t fr = 0, total = 0;
    CHECK(gpuMemGetInfo(&fr, &total));
    printf("free (what one allocation gets): %zu MiB of %zu MiB; asking for %zu MiB\n",
           fr / MIB, total / MIB, BIG / MIB);
    EXPECT(plain ? fr < BIG : fr >= BIG);

    char *big = NULL;
    gpuError_t e = gpuMalloc((void **)&big, BIG);
    if (plain) {
        printf("plain segments: %d (out of memory, as the %zu MiB free said)\n", (int)e, fr / MIB);
        EXPECT(e == gpuErrorOOM);
        EXPECT(!GPU_HAS_LAST_ERROR || gpuGetLastError() == gpuErrorOOM);
    } else {
        CHECK(e);
        for (size_t off = 0; off < BIG; off += PAGE)
            CHECK(gpuMemset(big + off, 0x5a, 1));
        CHECK(gpuMemset(big + BIG - 1, 0x5a, 1));
        CHECK(gpuDeviceSynchronize());
        EXPECT(gpuGetLastError() == gpuSuccess);
        struct simdev_counters c = sim_counters(-1);
        /* Each block grew the range by one mapping of its own: the freed ones went back. */
        printf("expandable: served; %llu mappings unmapped, %llu mapped\n",
               (unsigned long long)c.unmaps, (unsigned long long)c.maps);
        EXPECT(c.unmaps >= N - N / 3);
        CHECK(gpuFree(big));
    }
    for (int i = 1; i < N; i += 3) {
        EXPECT(marked(b[i], i));
        CHECK(gpuFree(b[i]));
    }
    return 0;
}
