/* The fake device's virtual memory: reservations of pages, physical handles counted against
 * the capacity, and a record of what is mapped and which work last touched each page, so that
 * a test sees every page used unmapped or unmapped under running work. The functions run under
 * fake_backend.c's lock. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "fake_backend.h"
#include "base/clock.h"

static void violate(fake_device *dev, const char *what, uintptr_t addr)
{
    if (dev->violations++ == 0)
        snprintf(dev->violation, sizeof dev->violation, "%s at %#lx", what, (unsigned long)addr);
}

/* The range holding addr, and the page index there; NULL outside every reservation. */
static fake_range *range_of(fake_device *dev, uintptr_t addr, size_t *page)
{
    for (int i = 0; i < FAKE_MAX_RANGES; i++) {
        fake_range *r = &dev->ranges[i];
        if (r->size && addr >= r->base && addr < r->base + r->size) {
            *page = (addr - r->base) / FAKE_PAGE;
            return r;
        }
    }
    return NULL;
}

/* The pages [first, first+n) of one range that make up [addr, addr+size): NULL when the span
 * is not page-aligned or leaves its reservation. */
static fake_page *span(fake_device *dev, uintptr_t addr, size_t size, size_t *n)
{
    size_t first;
    fake_range *r = range_of(dev, addr, &first);
    if (!r || size == 0 || addr % FAKE_PAGE || size % FAKE_PAGE || addr + size > r->base + r->size)
        return NULL;
    *n = size / FAKE_PAGE;
    return &r->pages[first];
}

/* The same, only when every page of it is mapped: what unmapping and access setting take. */
static fake_page *mapped_span(fake_device *dev, uintptr_t addr, size_t size, size_t *n)
{
    fake_page *pg = span(dev, addr, size, n);
    for (size_t i = 0; pg && i < *n; i++)
        if (!pg[i].handle)
            return NULL;
    return pg;
}

static void handle_put(fake_device *dev, fake_handle *h)
{
    if (h->live && h->released && h->maps == 0) {
        dev->used -= h->size;
        h->live = 0;
    }
}

int fake_vmm_granularity_unlocked(void *ctx, int d, size_t *out)
{
    (void)ctx;
    (void)d;
    *out = FAKE_PAGE;
    return CA_OK;
}

int fake_vmm_reserve_unlocked(void *ctx, int d, size_t size, void **out)
{
    fake_device *dev = ctx;
    (void)d;
    if (size == 0 || size % FAKE_PAGE)
        return CA_ERR_INVALID;
    for (int i = 0; i < FAKE_MAX_RANGES; i++) {
        fake_range *r = &dev->ranges[i];
        if (r->size)
            continue;
        if (!(r->pages = calloc(size / FAKE_PAGE, sizeof *r->pages)))
            return CA_ERR_OOM;
        for (size_t p = 0; p < size / FAKE_PAGE; p++)
            r->pages[p].use_stream = -1;
        r->base = dev->next_va;
        r->size = size;
        dev->next_va += size + FAKE_PAGE; /* a gap: ranges are never back to back */
        dev->reserves++;
        *out = (void *)r->base;
        return CA_OK;
    }
    return CA_ERR_OOM; /* out of addresses */
}

int fake_vmm_free_unlocked(void *ctx, int d, void *base, size_t size)
{
    fake_device *dev = ctx;
    (void)d;
    size_t first;
    fake_range *r = range_of(dev, (uintptr_t)base, &first);
    if (!r || r->base != (uintptr_t)base || r->size != size)
        return CA_ERR_INVALID;
    for (size_t p = 0; p < size / FAKE_PAGE; p++) {
        if (r->pages[p].handle) {
            violate(dev, "reservation freed with a page mapped", r->base + p * FAKE_PAGE);
            return CA_ERR_INVALID;
        }
    }
    free(r->pages);
    r->pages = NULL;
    r->size = 0;
    dev->va_frees++;
    return CA_OK;
}

int fake_vmm_create_unlocked(void *ctx, int d, size_t size, uint64_t *handle)
{
    fake_device *dev = ctx;
    (void)d;
    if (dev->fail_next_creates > 0) {
        dev->fail_next_creates--;
        return CA_ERR_OOM;
    }
    if (dev->fail_create_at && dev->fail_create_at == dev->vmm_creates + 1) {
        dev->fail_create_at = 0;
        return CA_ERR_OOM;
    }
    if (size == 0 || size % FAKE_PAGE)
        return CA_ERR_INVALID;
    if (dev->create_ns) /* a driver's price: the arena measures it */
        for (uint64_t until = ca_now_ns() + dev->create_ns; ca_now_ns() < until;)
            ;
    if (dev->used + size > dev->capacity)
        return CA_ERR_OOM;
    for (uint32_t i = 0; i < FAKE_MAX_HANDLES; i++) {
        fake_handle *h = &dev->handles[i];
        if (h->live)
            continue;
        *h = (fake_handle){.size = size, .live = 1};
        dev->used += size;
        dev->vmm_creates++;
        *handle = i + 1;
        return CA_OK;
    }
    return CA_ERR_OOM;
}

static fake_handle *handle_of(fake_device *dev, uint64_t handle)
{
    if (handle == 0 || handle > FAKE_MAX_HANDLES || !dev->handles[handle - 1].live)
        return NULL;
    return &dev->handles[handle - 1];
}

int fake_vmm_release_unlocked(void *ctx, int d, uint64_t handle)
{
    fake_device *dev = ctx;
    (void)d;
    fake_handle *h = handle_of(dev, handle);
    if (!h || h->released)
        return CA_ERR_INVALID;
    h->released = 1;
    dev->vmm_releases++;
    handle_put(dev, h);
    return CA_OK;
}

int fake_vmm_map_unlocked(void *ctx, int d, void *addr, size_t size, uint64_t handle)
{
    fake_device *dev = ctx;
    (void)d;
    size_t n = 0;
    fake_page *pg = span(dev, (uintptr_t)addr, size, &n);
    fake_handle *h = handle_of(dev, handle);
    if (!pg || !h || h->released || size != h->size)
        return CA_ERR_INVALID;
    for (size_t i = 0; i < n; i++)
        if (pg[i].handle)
            return CA_ERR_INVALID;
    for (size_t i = 0; i < n; i++)
        pg[i] = (fake_page){.handle = (uint32_t)handle, .use_stream = -1};
    h->maps++;
    dev->maps++;
    dev->mapped_bytes += size;
    return CA_OK;
}

int fake_vmm_unmap_unlocked(void *ctx, int d, void *addr, size_t size)
{
    fake_device *dev = ctx;
    (void)d;
    size_t n = 0, first = 0;
    fake_page *pg = mapped_span(dev, (uintptr_t)addr, size, &n);
    if (!pg)
        return CA_ERR_INVALID;
    fake_range *r = range_of(dev, (uintptr_t)addr, &first);
    /* As the driver: only whole mappings (a handle is mapped once, so a mapping is the run of
     * pages of one handle). */
    size_t pages = r->size / FAKE_PAGE;
    if ((first > 0 && r->pages[first - 1].handle == pg[0].handle) ||
        (first + n < pages && r->pages[first + n].handle == pg[n - 1].handle)) {
        violate(dev, "part of a mapping unmapped", (uintptr_t)addr);
        return CA_ERR_INVALID;
    }
    for (size_t i = 0; i < n; i++) {
        fake_page *p = &pg[i];
        uintptr_t at = (uintptr_t)addr + i * FAKE_PAGE;
        if (p->use_stream >= 0 && dev->streams[p->use_stream].done < p->use_seq)
            violate(dev, "page unmapped while work may still use it", at);
        fake_handle *h = &dev->handles[p->handle - 1];
        bool last_of_handle = i + 1 == n || pg[i + 1].handle != p->handle;
        *p = (fake_page){.use_stream = -1};
        if (last_of_handle) {
            h->maps--;
            handle_put(dev, h);
        }
        dev->unmaps++;
    }
    dev->unmap_calls++;
    dev->mapped_bytes -= size;
    return CA_OK;
}

int fake_vmm_set_access_unlocked(void *ctx, int d, void *addr, size_t size)
{
    fake_device *dev = ctx;
    (void)d;
    size_t n = 0;
    fake_page *pg = mapped_span(dev, (uintptr_t)addr, size, &n);
    if (!pg)
        return CA_ERR_INVALID;
    for (size_t i = 0; i < n; i++)
        pg[i].access = 1;
    dev->accesses++;
    return CA_OK;
}

void fake_use_unlocked(fake_device *dev, int stream, const void *ptr, size_t size)
{
    uint64_t seq = ++dev->streams[stream].enq;
    for (uintptr_t a = (uintptr_t)ptr / FAKE_PAGE * FAKE_PAGE; a < (uintptr_t)ptr + size;
         a += FAKE_PAGE) {
        size_t page;
        fake_range *r = range_of(dev, a, &page);
        if (!r)
            continue;
        fake_page *p = &r->pages[page];
        if (!p->handle || !p->access)
            violate(dev, "access to a page without memory", a);
        p->use_stream = (int8_t)stream;
        p->use_seq = seq;
    }
}

int fake_vmm_peer_access_unlocked(void *ctx, int d, void *addr, size_t size, int peer, bool on)
{
    fake_device *dev = ctx;
    (void)d;
    size_t n = 0;
    fake_page *pg = mapped_span(dev, (uintptr_t)addr, size, &n);
    if (!pg || peer < 0 || peer >= 64)
        return CA_ERR_INVALID;
    for (size_t i = 0; i < n; i++)
        pg[i].peers = on ? pg[i].peers | (uint64_t)1 << peer : pg[i].peers & ~((uint64_t)1 << peer);
    dev->peer_calls++;
    return CA_OK;
}

int fake_peer_reaches(fake_device *dev, const void *ptr, size_t size, int peer)
{
    int inside = 0;
    for (uintptr_t a = (uintptr_t)ptr / FAKE_PAGE * FAKE_PAGE; a < (uintptr_t)ptr + size;
         a += FAKE_PAGE) {
        size_t page;
        fake_range *r = range_of(dev, a, &page);
        if (!r || !r->pages[page].handle)
            continue;
        inside = 1;
        if (!(r->pages[page].peers >> peer & 1))
            return 0;
    }
    return inside;
}

int fake_mapped_unlocked(fake_device *dev, const void *ptr, size_t size)
{
    int inside = 0;
    for (uintptr_t a = (uintptr_t)ptr / FAKE_PAGE * FAKE_PAGE; a < (uintptr_t)ptr + size;
         a += FAKE_PAGE) {
        size_t page;
        fake_range *r = range_of(dev, a, &page);
        if (!r)
            continue;
        inside = 1;
        if (!r->pages[page].handle || !r->pages[page].access)
            return 0;
    }
    return inside ? 1 : -1;
}
