#include "bump_backend.h"

#include <stddef.h>

/* Far above any real host mapping; the arena never dereferences device addresses. */
#define BUMP_BASE ((uintptr_t)1 << 44)

static int b_alloc(void *ctx, int dev, size_t size, void **out)
{
    bump_device *d = ctx;
    (void)dev;
    size_t step = (size + 4095u) & ~(size_t)4095u;
    uintptr_t addr = __atomic_fetch_add(&d->next, step, __ATOMIC_RELAXED);
    __atomic_fetch_add(&d->allocs, 1, __ATOMIC_RELAXED);
    *out = (void *)addr;
    return CA_OK;
}

static int b_release(void *ctx, int dev, void *ptr)
{
    bump_device *d = ctx;
    (void)dev;
    (void)ptr;
    __atomic_fetch_add(&d->releases, 1, __ATOMIC_RELAXED);
    return CA_OK;
}

/* Events carry nothing: any non-NULL token will do, and they are always complete. */
static int b_event_create(void *ctx, int dev, ca_event_t *out)
{
    (void)dev;
    *out = ctx;
    return CA_OK;
}

static int b_event_destroy(void *ctx, int dev, ca_event_t ev)
{
    (void)ctx, (void)dev, (void)ev;
    return CA_OK;
}

static int b_event_record(void *ctx, int dev, ca_event_t ev, ca_stream_t s)
{
    (void)ctx, (void)dev, (void)ev, (void)s;
    return CA_OK;
}

static int b_event_query(void *ctx, int dev, ca_event_t ev)
{
    (void)ctx, (void)dev, (void)ev;
    return 1;
}

static int b_event_synchronize(void *ctx, int dev, ca_event_t ev)
{
    (void)ctx, (void)dev, (void)ev;
    return CA_OK;
}

static int b_stream_wait_event(void *ctx, int dev, ca_stream_t s, ca_event_t ev)
{
    (void)ctx, (void)dev, (void)s, (void)ev;
    return CA_OK;
}

static int b_device_synchronize(void *ctx, int dev)
{
    (void)ctx, (void)dev;
    return CA_OK;
}

static int b_mem_info(void *ctx, int dev, size_t *free_bytes, size_t *total_bytes)
{
    (void)ctx, (void)dev;
    *free_bytes = (size_t)64 << 30;
    *total_bytes = (size_t)80 << 30;
    return CA_OK;
}

static void b_clear_error(void *ctx)
{
    (void)ctx;
}

void bump_init(bump_device *dev, ca_backend *be)
{
    dev->next = BUMP_BASE;
    dev->allocs = 0;
    dev->releases = 0;
    *be = (ca_backend){
        .ctx = dev,
        .alloc = b_alloc,
        .release = b_release,
        .event_create = b_event_create,
        .event_destroy = b_event_destroy,
        .event_record = b_event_record,
        .event_query = b_event_query,
        .event_synchronize = b_event_synchronize,
        .stream_wait_event = b_stream_wait_event,
        .device_synchronize = b_device_synchronize,
        .mem_info = b_mem_info,
        .clear_error = b_clear_error,
    };
}
