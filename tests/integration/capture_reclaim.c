/* A reclaim asked for while a global-mode capture is under way, through the public API
 * (argument "public") or the statistics monitor (argument "monitor", as cachealloc-top asks):
 * giving cached segments back is a driver free, which the capture forbids to every thread. The
 * reclaim must wait: no driver call until the capture ended (which must succeed), and then the
 * cached segment goes back at the program's next allocation. */
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cachealloc.h"
#include "gpu_graph.h"
#include "stats/abi.h"

#define BIG ((size_t)64 << 20)

static uint64_t driver_frees(void)
{
    return simdev_frees(sim_counters(0));
}

/* This process's statistics segment, mapped read-write as cachealloc-top maps it (in the
 * test's own CACHEALLOC_SHM_DIR when it names one). */
static ca_stats_header *segment(void)
{
    char name[512];
    const char *dir = getenv("CACHEALLOC_SHM_DIR"); /* a file there, else POSIX shm */
    snprintf(name, sizeof name, "%s/" CA_STATS_NAME_PREFIX "%u.%d", dir ? dir : "",
             (unsigned)geteuid(), (int)getpid());
    int fd = dir ? open(name, O_RDWR) : shm_open(name, O_RDWR, 0);
    EXPECT(fd >= 0);
    void *m = mmap(NULL, sizeof(ca_stats_header), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    EXPECT(m != MAP_FAILED);
    return m;
}

static uint64_t ask_monitor(ca_stats_header *h)
{
    uint64_t seq = __atomic_load_n(&h->reclaim_done, __ATOMIC_ACQUIRE) + 1;
    __atomic_store_n(&h->reclaim_request, CA_STATS_RECLAIM_WORD(seq, -1), __ATOMIC_RELEASE);
    return seq;
}

static int answered(ca_stats_header *h, uint64_t seq)
{
    return __atomic_load_n(&h->reclaim_done, __ATOMIC_ACQUIRE) == seq;
}

int main(int argc, char **argv)
{
    int monitor = argc > 1 && strcmp(argv[1], "monitor") == 0;
    gpu_own_stats_dir();
    gpuStream_t s;
    void *buf, *big, *p;
    CHECK(gpuStreamCreate(&s));
    CHECK(gpuMalloc(&buf, 256));
    CHECK(gpuMalloc(&big, BIG));
    CHECK(gpuFree(big));
    CHECK(gpuDeviceSynchronize()); /* the 64 MiB segment is cached and wholly free */
    ca_stats_header *h = monitor ? segment() : NULL;
    uint64_t frees = driver_frees();

    CHECK(gpuStreamBeginCapture(s, gpuCaptureGlobal));
    CHECK(gpuMemsetAsync(buf, 1, 256, s));
    uint64_t seq = 0;
    if (monitor) {
        seq = ask_monitor(h);
        sleep_ms(800); /* three periods of the monitor */
        EXPECT(!answered(h, seq));
    } else {
        EXPECT(cachealloc_reclaim(-1) == 0);
    }
    EXPECT(driver_frees() == frees);
    gpuGraphExec_t x = gpu_capture_end(s);
    EXPECT(driver_frees() == frees);

    /* The next allocation outside a capture gives the cached segment back. */
    CHECK(gpuMalloc(&p, 512));
    if (monitor) {
        for (int i = 0; i < 400 && !answered(h, seq); i++)
            sleep_ms(10);
        EXPECT(answered(h, seq));
        EXPECT(__atomic_load_n(&h->reclaim_bytes, __ATOMIC_ACQUIRE) >= BIG);
    }
    EXPECT(driver_frees() > frees);
    CHECK(gpuFree(p));
    CHECK(gpuGraphLaunch(x, s));
    CHECK(gpuStreamSynchronize(s));
    CHECK(gpuGraphExecDestroy(x));
    printf("reclaim through the %s waited for the capture's end\n", monitor ? "monitor" : "API");
    return 0;
}
