/* A process that publishes statistics from a fake source, for the cachealloc-top tests.
 *
 *   fake_writer [--devices N] [--mib M] [--api NAME] [--config TEXT] [--total-mib T]
 *               [--host-mib H]
 *
 * Device d reports reserved = (d + 1) * M MiB, half of it allocated, a quarter cached, a
 * quarter pending; its waits cost 1.5 s + d ns in syncs, (d + 1) x 250 ms in 5 fence waits and
 * (d + 1) x 2 ms in 10 x (d + 1) growths; reclaim gives the cached bytes back; its names: a UUID ending in d, PCI bus
 * 0x3b + d. Its memory, as a driver would report
 * it: T MiB in all (default 16384; 0: the question fails), of which an eighth is used by
 * others and the reserved bytes by this process. With H, a pool of pinned host memory of H MiB,
 * three quarters of it the program's, a quarter cached. Prints "ready <pid>" once the segment
 * exists, then sleeps (never calling the writer again) until SIGTERM or SIGINT, and exits
 * normally so that the atexit handler removes the segment. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stats/writer.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_devices = 1;
static uint64_t g_unit = 1u << 20;
static uint64_t g_cached[CA_MAX_DEVICES], g_reserved[CA_MAX_DEVICES];
static uint64_t g_total = (uint64_t)16384 << 20;
static uint64_t g_host; /* pinned host pool's bytes; 0: none */

static int fake_count(void *ctx)
{
    (void)ctx;
    return g_devices;
}

static int fake_read(void *ctx, int dev, ca_dev_stats *o)
{
    (void)ctx;
    memset(o, 0, sizeof *o);
    pthread_mutex_lock(&g_lock);
    uint64_t base = (uint64_t)(dev + 1) * g_unit;
    o->reserved_bytes = g_reserved[dev];
    o->allocated_bytes = base / 2;
    o->cached_bytes = g_cached[dev];
    o->pending_bytes = base / 4;
    o->requested_bytes = base / 2 - 100;
    o->peak_reserved_bytes = base;
    o->peak_allocated_bytes = base / 2;
    o->alloc_calls = 1000 * (uint64_t)(dev + 1);
    o->free_calls = 900 * (uint64_t)(dev + 1);
    o->cache_hits = 990 * (uint64_t)(dev + 1);
    o->driver_alloc_calls = 10 * (uint64_t)(dev + 1);
    o->driver_free_calls = 2;
    o->fences = 7;
    o->device_syncs = 1;
    o->oom_recoveries = 3;
    o->oom_failures = 1;
    o->invalid_frees = 0;
    o->segments = 4;
    o->largest_free_block = g_cached[dev];
    o->sync_wait_ns = UINT64_C(1500000000) + (uint64_t)dev; /* 1.5 s and dev ns */
    o->fence_wait_ns = UINT64_C(250000000) * (uint64_t)(dev + 1);
    o->fence_waits = 5;
    o->grow_ns = UINT64_C(2000000) * (uint64_t)(dev + 1);
    o->growths = 10 * (uint64_t)(dev + 1);
    pthread_mutex_unlock(&g_lock);
    return 1;
}

static int fake_host(void *ctx, ca_dev_stats *o)
{
    (void)ctx;
    if (!g_host)
        return 0;
    memset(o, 0, sizeof *o);
    o->reserved_bytes = g_host;
    o->allocated_bytes = g_host / 4 * 3;
    o->cached_bytes = g_host / 4;
    o->alloc_calls = 500;
    o->free_calls = 499;
    o->cache_hits = 498;
    o->driver_alloc_calls = 2;
    o->segments = 2;
    return 1;
}

/* Device d: NVIDIA's form of a UUID ending in d, and PCI bus 0x3b + d. */
static int fake_identify(void *ctx, int dev, char uuid[CA_STATS_UUID_LEN],
                         char pci[CA_STATS_PCI_LEN])
{
    (void)ctx;
    snprintf(uuid, CA_STATS_UUID_LEN, "GPU-96be9fff-fdfd-9b87-88d4-fe5b9a0121%02d", dev);
    snprintf(pci, CA_STATS_PCI_LEN, "00000000:%02X:00.0", 0x3b + dev);
    return 0;
}

static uint64_t fake_reclaim(void *ctx, int dev)
{
    (void)ctx;
    uint64_t freed = 0;
    pthread_mutex_lock(&g_lock);
    for (int d = 0; d < g_devices; d++) {
        if (dev >= 0 && d != dev)
            continue;
        freed += g_cached[d];
        g_reserved[d] -= g_cached[d];
        g_cached[d] = 0;
    }
    pthread_mutex_unlock(&g_lock);
    return freed;
}

static int fake_mem(void *ctx, int dev, uint64_t *free_bytes, uint64_t *total_bytes)
{
    (void)ctx;
    if (g_total == 0)
        return -1;
    pthread_mutex_lock(&g_lock);
    uint64_t used = g_total / 8 + g_reserved[dev];
    pthread_mutex_unlock(&g_lock);
    *total_bytes = g_total;
    *free_bytes = used < g_total ? g_total - used : 0;
    return 0;
}

static volatile sig_atomic_t g_stop;
static void on_term(int sig)
{
    (void)sig;
    g_stop = 1;
}

int main(int argc, char **argv)
{
    const char *api = "cuda", *config = "pool=split";
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--devices"))
            g_devices = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--mib"))
            g_unit = strtoull(argv[i + 1], NULL, 10) << 20;
        else if (!strcmp(argv[i], "--api"))
            api = argv[i + 1];
        else if (!strcmp(argv[i], "--config"))
            config = argv[i + 1];
        else if (!strcmp(argv[i], "--host-mib"))
            g_host = strtoull(argv[i + 1], NULL, 10) << 20;
        else if (!strcmp(argv[i], "--total-mib"))
            g_total = strtoull(argv[i + 1], NULL, 10) << 20;
    }
    if (g_devices < 1 || g_devices > CA_MAX_DEVICES)
        g_devices = 1;
    for (int d = 0; d < g_devices; d++) {
        g_reserved[d] = (uint64_t)(d + 1) * g_unit;
        g_cached[d] = g_reserved[d] / 4;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    ca_stats_source src = {NULL,     fake_count, fake_read, fake_reclaim, fake_mem,
                           NULL,     fake_host,  fake_identify};
    if (ca_stats_start(&src, api, config) != 0) {
        perror("ca_stats_start");
        return 1;
    }
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    while (!g_stop)
        pause();
    return 0;
}
