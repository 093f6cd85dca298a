/* cudaMemGetInfo counts a freed, cached block as free; cudaDeviceReset empties the device's cache; a
 * forked child allocates normally, from an empty cache (pinned host memory too: the parent's
 * cached pinned block is a plain copy in the child). The simulator's stream threads do not
 * survive fork (nor does a real CUDA context), so the child only allocates and frees. */
#include <sys/wait.h>
#include <unistd.h>

#include "cachealloc.h"
#include "gpu.h"

#define MIB ((size_t)1 << 20)

static void use_block(size_t n, int value)
{
    void *p;
    CHECK(gpuMalloc(&p, n));
    CHECK(gpuMemset(p, value, n));
    unsigned char probe[64];
    CHECK(gpuMemcpy(probe, (char *)p + n - sizeof probe, sizeof probe, gpuMemcpyDefault));
    for (size_t i = 0; i < sizeof probe; i++)
        EXPECT(probe[i] == (unsigned char)value);
    CHECK(gpuFree(p));
}

int main(void)
{
    size_t free0, total, free1, free2;
    CHECK(gpuMemGetInfo(&free0, &total));
    void *p;
    CHECK(gpuMalloc(&p, 64 * MIB));
    CHECK(gpuMemGetInfo(&free1, &total));
    EXPECT(free1 + 64 * MIB <= free0);
    CHECK(gpuFree(p)); /* cached, not returned to the driver */
    CHECK(gpuMemGetInfo(&free2, &total));
    printf("free: start %zu, held %zu, freed %zu (total %zu)\n", free0, free1, free2, total);
    EXPECT(free2 >= free1 + 64 * MIB);

    /* The cache still holds the block: the driver has it reserved. */
    struct simdev_counters c = sim_counters(0);
    EXPECT(c.reserved_bytes >= 64 * MIB);
    CHECK(gpuDeviceReset());
    c = sim_counters(0);
    printf("reserved after reset: %llu\n", (unsigned long long)c.reserved_bytes);
    EXPECT(c.reserved_bytes == 0);
    uint64_t mallocs = simdev_allocs(c);
    use_block(64 * MIB, 7); /* the forgotten segment is not handed out: a new one is made */
    EXPECT(simdev_allocs(sim_counters(0)) > mallocs);

    void *h;
    CHECK(gpuMallocHost(&h, MIB));
    CHECK(gpuFreeHost(h)); /* cached */
    pid_t pid = fork();
    EXPECT(pid >= 0);
    if (pid == 0) {
        /* The parent's cached 64 MiB block is not the child's: a new driver allocation. */
        cachealloc_stats st;
        if (cachealloc_get_stats(0, &st) && st.reserved_bytes != 0)
            _exit(2);
        uint64_t before = simdev_allocs(sim_counters(0));
        void *q;
        if (gpuMalloc(&q, 64 * MIB) != gpuSuccess || simdev_allocs(sim_counters(0)) <= before)
            _exit(3);
        uint64_t grown = simdev_allocs(sim_counters(0));
        if (gpuFree(q) != gpuSuccess)
            _exit(4);
        if (gpuMalloc(&q, 64 * MIB) != gpuSuccess || simdev_allocs(sim_counters(0)) != grown)
            _exit(5); /* ... and the child's own cache works */
        uint64_t pins = sim_counters(-1).host_allocs;
        void *g;
        if (gpuMallocHost(&g, MIB) != gpuSuccess || sim_counters(-1).host_allocs != pins + 1)
            _exit(6);
        if (gpuFreeHost(g) != gpuSuccess)
            _exit(7);
        _exit(0);
    }
    int status = 0;
    EXPECT(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "child exit status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    use_block(MIB, 3); /* the parent's cache is intact */
    return 0;
}
