/* The statistics segment's source: what the monitor thread reads and asks of the cache
 * (counters, reclaims, the device's memory, the idle release), and the segment's start at the
 * first allocation. Kept apart from initialization, which only calls it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backend.h"
#include "capture.h"
#include "base/clock.h"
#include "host/pool.h"
#include "process.h"
#include "stats_source.h"
#include "stats/writer.h"

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stats_tried;
static ca_stats_source stats_src;

static int src_device_count(void *ctx)
{
    return ca_device_count(((ca_runtime *)ctx)->arena);
}

static int src_read_device(void *ctx, int dev, ca_dev_stats *out)
{
    return ca_get_stats(((ca_runtime *)ctx)->arena, dev, out);
}

/* The device's names, for the exporter's labels (UUID and PCI bus id, as dcgm-exporter's). */
static int src_identify(void *ctx, int dev, char uuid[CA_STATS_UUID_LEN],
                        char pci_bus_id[CA_STATS_PCI_LEN])
{
    return ca_backend_identify(ctx, dev, uuid, CA_STATS_UUID_LEN, pci_bus_id, CA_STATS_PCI_LEN);
}

/* Pinned host memory's pool, once the program has pinned through the cache. */
static int src_read_host(void *ctx, ca_dev_stats *out)
{
    ca_host_pool *hp = atomic_load(&((ca_runtime *)ctx)->host_pool);
    if (!hp)
        return 0;
    ca_host_get_dev_stats(hp, out);
    return 1;
}

/* The monitor never calls the device during a stream capture: the request waits (capture.c). */
static uint64_t src_reclaim(void *ctx, int dev)
{
    return ca_capture_reclaim(ctx, dev, 1);
}

/* The device's memory as the real driver (runtime) reports it, through the arena's backend,
 * which makes the device (context) current on the monitor thread and restores it after. */
static int src_mem_info(void *ctx, int dev, uint64_t *free_bytes, uint64_t *total_bytes)
{
    ca_backend be;
    size_t f = 0, t = 0;
    ca_backend_make(ctx, &be);
    if (be.mem_info(be.ctx, dev, &f, &t) != CA_OK)
        return -1;
    *free_bytes = f;
    *total_bytes = t;
    return 0;
}

/* Memory the program left unused on a device for CACHEALLOC_IDLE_RELEASE seconds goes back to
 * the driver, for the other processes (docs/arena.md, "A good neighbour"); during a stream
 * capture, after it (capture.c). */
static void src_tick(void *ctx)
{
    ca_runtime *rt = ctx;
    uint64_t idle_ns = ca_shim_options()->idle_release_s * UINT64_C(1000000000);
    uint64_t now = ca_now_ns();
    int n = ca_device_count(rt->arena);
    for (int dev = 0; dev < n; dev++)
        if (ca_device_idle(rt->arena, dev, now, idle_ns))
            ca_capture_reclaim(rt, dev, 0);
}

static CA_COLD void stats_start_slow(ca_runtime *rt)
{
    pthread_mutex_lock(&stats_lock);
    if (!atomic_load(&stats_tried)) {
        atomic_store(&stats_tried, 1);
        if (ca_shim_options()->stats) {
            char summary[512];
            ca_options_summary(ca_shim_options(), summary, sizeof summary);
            stats_src = (ca_stats_source){
                .ctx = rt,
                .device_count = src_device_count,
                .read_device = src_read_device,
                .reclaim = src_reclaim,
                .mem_info = src_mem_info,
                .tick = src_tick,
                .read_host = src_read_host,
                .identify = src_identify,
            };
            ca_stats_start(&stats_src, rt->api, summary);
        }
    }
    pthread_mutex_unlock(&stats_lock);
}

void ca_stats_ensure(ca_runtime *rt)
{
    if (atomic_load_explicit(&stats_tried, memory_order_relaxed))
        return;
    stats_start_slow(rt);
}

void ca_stats_source_after_fork(void)
{
    /* The parent's segment and monitor thread are not the child's; the child publishes its
     * own segment at its first allocation. Another thread may have held the lock at fork. */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    stats_lock = fresh;
    if (atomic_load(&stats_tried)) {
        ca_stats_forget_after_fork();
        atomic_store(&stats_tried, 0);
    }
}
