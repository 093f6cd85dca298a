#include "fake_backend.h"

#include <pthread.h>
#include <string.h>

/* The arena calls some backend functions without its lock (release, waits): serialize here. */
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
#define LOCKED(expr) do { pthread_mutex_lock(&fake_lock); int rc_ = (expr); pthread_mutex_unlock(&fake_lock); return rc_; } while (0)

int fake_stream(fake_device *dev, ca_stream_t s)
{
    for (int i = 0; i < dev->nstreams; i++)
        if (dev->streams[i].key == s)
            return i;
    if (dev->nstreams == FAKE_MAX_STREAMS)
        return 0;
    dev->streams[dev->nstreams].key = s;
    return dev->nstreams++;
}

void fake_work(fake_device *dev, ca_stream_t s)
{
    pthread_mutex_lock(&fake_lock);
    dev->streams[fake_stream(dev, s)].enq++;
    pthread_mutex_unlock(&fake_lock);
}

void fake_complete(fake_device *dev, ca_stream_t s)
{
    pthread_mutex_lock(&fake_lock);
    fake_queue *st = &dev->streams[fake_stream(dev, s)];
    st->done = st->enq;
    pthread_mutex_unlock(&fake_lock);
}

static void complete_all(fake_device *dev)
{
    for (int i = 0; i < dev->nstreams; i++)
        dev->streams[i].done = dev->streams[i].enq;
}

void fake_complete_all(fake_device *dev)
{
    pthread_mutex_lock(&fake_lock);
    complete_all(dev);
    pthread_mutex_unlock(&fake_lock);
}

int fake_done(fake_device *dev, ca_stream_t s, uint64_t seq)
{
    pthread_mutex_lock(&fake_lock);
    int done = dev->streams[fake_stream(dev, s)].done >= seq;
    pthread_mutex_unlock(&fake_lock);
    return done;
}

static int f_alloc_unlocked(void *ctx, int d, size_t size, void **out)
{
    fake_device *dev = ctx;
    (void)d;
    if (dev->fail_next_allocs > 0) {
        dev->fail_next_allocs--;
        return CA_ERR_OOM;
    }
    if (dev->used + size > dev->capacity || dev->nlive == 4096)
        return CA_ERR_OOM;
    dev->allocs++;
    dev->used += size;
    uintptr_t addr = dev->next_addr + dev->base_offset;
    dev->next_addr += (size + 0xfffff) & ~(uintptr_t)0xfffff; /* gaps between segments */
    dev->next_addr += 1 << 20;
    dev->live_addr[dev->nlive] = addr;
    dev->live_size[dev->nlive++] = size;
    *out = (void *)addr;
    return CA_OK;
}

static int f_release_unlocked(void *ctx, int d, void *ptr)
{
    fake_device *dev = ctx;
    (void)d;
    /* The real cudaFree synchronizes the device first. */
    complete_all(dev);
    dev->device_syncs++;
    for (int i = 0; i < dev->nlive; i++) {
        if (dev->live_addr[i] == (uintptr_t)ptr) {
            dev->used -= dev->live_size[i];
            dev->live_addr[i] = dev->live_addr[--dev->nlive];
            dev->live_size[i] = dev->live_size[dev->nlive];
            dev->releases++;
            return CA_OK;
        }
    }
    return CA_ERR_INVALID;
}

static int f_event_create_unlocked(void *ctx, int d, ca_event_t *out)
{
    fake_device *dev = ctx;
    (void)d;
    for (int i = 0; i < FAKE_MAX_EVENTS; i++) {
        if (!dev->events[i].used) {
            memset(&dev->events[i], 0, sizeof dev->events[i]);
            dev->events[i].used = 1;
            *out = &dev->events[i];
            return CA_OK;
        }
    }
    return CA_ERR_BACKEND;
}

static int f_event_destroy_unlocked(void *ctx, int d, ca_event_t ev)
{
    (void)ctx;
    (void)d;
    ((fake_event *)ev)->used = 0;
    return CA_OK;
}

static int f_event_record_unlocked(void *ctx, int d, ca_event_t ev, ca_stream_t s)
{
    fake_device *dev = ctx;
    (void)d;
    int i = fake_stream(dev, s);
    if (i == dev->record_fails_for)
        return CA_ERR_BACKEND;
    fake_event *e = ev;
    e->recorded = 1;
    e->stream = i;
    e->seq = dev->streams[i].enq;
    dev->records++;
    return CA_OK;
}

static int f_event_query_unlocked(void *ctx, int d, ca_event_t ev)
{
    fake_device *dev = ctx;
    (void)d;
    fake_event *e = ev;
    dev->queries++;
    if (e->recorded && dev->query_error)
        return -1;
    return !e->recorded || dev->streams[e->stream].done >= e->seq;
}

static int f_stream_query_unlocked(void *ctx, int d, ca_stream_t s)
{
    fake_device *dev = ctx;
    (void)d;
    fake_queue *q = &dev->streams[fake_stream(dev, s)];
    dev->stream_queries++;
    if (dev->query_error)
        return -1;
    return q->done >= q->enq;
}

static int f_event_sync_unlocked(void *ctx, int d, ca_event_t ev)
{
    fake_device *dev = ctx;
    (void)d;
    fake_event *e = ev;
    dev->event_syncs++;
    if (e->recorded && dev->streams[e->stream].done < e->seq)
        dev->streams[e->stream].done = e->seq;
    return CA_OK;
}

static int f_device_sync_unlocked(void *ctx, int d)
{
    fake_device *dev = ctx;
    (void)d;
    dev->device_syncs++;
    complete_all(dev);
    return CA_OK;
}

static int f_mem_info_unlocked(void *ctx, int d, size_t *fr, size_t *total)
{
    fake_device *dev = ctx;
    (void)d;
    *fr = dev->capacity - dev->used;
    *total = dev->capacity;
    return CA_OK;
}

static int f_alloc(void *ctx, int d, size_t size, void **out) { LOCKED(f_alloc_unlocked(ctx, d, size, out)); }
static int f_release(void *ctx, int d, void *ptr) { LOCKED(f_release_unlocked(ctx, d, ptr)); }
static int f_event_create(void *ctx, int d, ca_event_t *out) { LOCKED(f_event_create_unlocked(ctx, d, out)); }
static int f_event_destroy(void *ctx, int d, ca_event_t ev) { LOCKED(f_event_destroy_unlocked(ctx, d, ev)); }
static int f_event_record(void *ctx, int d, ca_event_t ev, ca_stream_t s) { LOCKED(f_event_record_unlocked(ctx, d, ev, s)); }
static int f_event_query(void *ctx, int d, ca_event_t ev) { LOCKED(f_event_query_unlocked(ctx, d, ev)); }
static int f_stream_query(void *ctx, int d, ca_stream_t s) { LOCKED(f_stream_query_unlocked(ctx, d, s)); }
static void run_hook(void (**hook)(void))
{
    /* Several threads may wait at once: exactly one of them runs the hook. */
    void (*h)(void) = __atomic_exchange_n(hook, NULL, __ATOMIC_ACQ_REL);
    if (h)
        h();
}

static int f_event_sync(void *ctx, int d, ca_event_t ev)
{
    pthread_mutex_lock(&fake_lock);
    int rc = f_event_sync_unlocked(ctx, d, ev);
    pthread_mutex_unlock(&fake_lock);
    run_hook(&((fake_device *)ctx)->on_event_sync);
    return rc;
}

static int f_device_sync(void *ctx, int d)
{
    pthread_mutex_lock(&fake_lock);
    int rc = f_device_sync_unlocked(ctx, d);
    pthread_mutex_unlock(&fake_lock);
    run_hook(&((fake_device *)ctx)->on_device_sync);
    return rc;
}
static int f_mem_info(void *ctx, int d, size_t *fr, size_t *total) { LOCKED(f_mem_info_unlocked(ctx, d, fr, total)); }

static void f_clear(void *ctx) { ((fake_device *)ctx)->clears++; }

static int f_vmm_granularity(void *ctx, int d, size_t *out) { LOCKED(fake_vmm_granularity_unlocked(ctx, d, out)); }
static int f_vmm_reserve(void *ctx, int d, size_t size, void **out) { LOCKED(fake_vmm_reserve_unlocked(ctx, d, size, out)); }
static int f_vmm_free(void *ctx, int d, void *base, size_t size) { LOCKED(fake_vmm_free_unlocked(ctx, d, base, size)); }
static int f_vmm_create(void *ctx, int d, size_t size, uint64_t *h) { LOCKED(fake_vmm_create_unlocked(ctx, d, size, h)); }
static int f_vmm_release(void *ctx, int d, uint64_t h) { LOCKED(fake_vmm_release_unlocked(ctx, d, h)); }
static int f_vmm_map(void *ctx, int d, void *addr, size_t size, uint64_t h) { LOCKED(fake_vmm_map_unlocked(ctx, d, addr, size, h)); }
static int f_vmm_unmap(void *ctx, int d, void *addr, size_t size) { LOCKED(fake_vmm_unmap_unlocked(ctx, d, addr, size)); }
static int f_vmm_set_access(void *ctx, int d, void *addr, size_t size) { LOCKED(fake_vmm_set_access_unlocked(ctx, d, addr, size)); }
static int f_vmm_peer_access(void *ctx, int d, void *addr, size_t size, int peer, bool on) { LOCKED(fake_vmm_peer_access_unlocked(ctx, d, addr, size, peer, on)); }

void fake_use(fake_device *dev, ca_stream_t s, const void *ptr, size_t size)
{
    pthread_mutex_lock(&fake_lock);
    fake_use_unlocked(dev, fake_stream(dev, s), ptr, size);
    pthread_mutex_unlock(&fake_lock);
}

int fake_mapped(fake_device *dev, const void *ptr, size_t size)
{
    LOCKED(fake_mapped_unlocked(dev, ptr, size));
}

void fake_init(fake_device *dev, ca_backend *be, uint64_t capacity)
{
    memset(dev, 0, sizeof *dev);
    dev->capacity = capacity;
    dev->next_addr = (uintptr_t)1 << 40;
    dev->record_fails_for = -1;
    dev->next_va = (uintptr_t)1 << 44;
    fake_stream(dev, CA_STREAM_LEGACY);
    ca_backend b = {
        .ctx = dev,
        .alloc = f_alloc,
        .release = f_release,
        .event_create = f_event_create,
        .event_destroy = f_event_destroy,
        .event_record = f_event_record,
        .event_query = f_event_query,
        .event_synchronize = f_event_sync,
        .stream_wait_event = NULL,
        .stream_query = f_stream_query,
        .device_synchronize = f_device_sync,
        .mem_info = f_mem_info,
        .clear_error = f_clear,
        .vmm_granularity = f_vmm_granularity,
        .vmm_reserve = f_vmm_reserve,
        .vmm_free = f_vmm_free,
        .vmm_create = f_vmm_create,
        .vmm_release = f_vmm_release,
        .vmm_map = f_vmm_map,
        .vmm_unmap = f_vmm_unmap,
        .vmm_set_access = f_vmm_set_access,
        .vmm_peer_access = f_vmm_peer_access,
    };
    *be = b;
}

uint64_t fake_enqueued(fake_device *dev, ca_stream_t s)
{
    pthread_mutex_lock(&fake_lock);
    uint64_t n = dev->streams[fake_stream(dev, s)].enq;
    pthread_mutex_unlock(&fake_lock);
    return n;
}
