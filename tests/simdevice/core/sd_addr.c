/* sd_addr.c: each device's address space. A PROT_NONE, MAP_NORESERVE range of 4x capacity is
 * reserved at first use; allocations are carved next-fit (freed addresses are not reused at
 * once) and mapped read-write without being touched, so large allocations cost no RAM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sd_internal.h"
#include "sd_sorted.h"

static size_t page_size(void)
{
    static size_t ps;
    if (!ps)
        ps = (size_t)sysconf(_SC_PAGESIZE);
    return ps;
}

int sd_dev_reserve(struct sd_device *d)
{
    if (d->base)
        return SD_OK;
    size_t range = sd_cfg.memory * 4;
    size_t ps = page_size();
    range = (range + ps - 1) / ps * ps;
    void *p = mmap(NULL, range, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "simdevice: cannot reserve %zu bytes of address space for device %d\n",
                range, d->id);
        return SD_ENOMEM;
    }
    d->base = (uintptr_t)p;
    d->range = range;
    d->cursor = d->base;
    return SD_OK;
}

struct sd_device *sd_dev_of(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    for (int i = 0; i < sd_cfg.devices; i++) {
        struct sd_device *d = &sd_dev[i];
        if (d->base && a >= d->base && a - d->base < d->range)
            return d;
    }
    return sd_vmm_dev_of(a);
}

_Static_assert(offsetof(struct sd_alloc, addr) == 0, "allocations are address-ordered records");

/* Index of the first allocation whose address is > p. */
static size_t upper(const struct sd_table *t, uintptr_t p)
{
    return sd_sorted_upper(t->v, t->n, sizeof *t->v, p);
}

struct sd_alloc *sd_table_find_start(struct sd_table *t, uintptr_t p)
{
    size_t i = upper(t, p);
    if (i && t->v[i - 1].addr == p)
        return &t->v[i - 1];
    return NULL;
}

struct sd_alloc *sd_table_find_containing(struct sd_table *t, uintptr_t p)
{
    size_t i = upper(t, p);
    if (i && p - t->v[i - 1].addr < t->v[i - 1].size)
        return &t->v[i - 1];
    return NULL;
}

int sd_table_insert(struct sd_table *t, const struct sd_alloc *a)
{
    struct sd_alloc *v = sd_sorted_insert(t->v, &t->n, &t->cap, sizeof *t->v, a);
    if (!v)
        return -1;
    t->v = v;
    return 0;
}

void sd_table_remove(struct sd_table *t, uintptr_t addr)
{
    size_t i = upper(t, addr);
    if (!i || t->v[i - 1].addr != addr)
        return;
    sd_sorted_cut(t->v, &t->n, sizeof *t->v, i - 1, 1);
}

/* First gap of `span` bytes at or after `from` and ending before `limit`, or 0. */
static uintptr_t gap_from(const struct sd_table *t, uintptr_t from, uintptr_t limit, size_t span)
{
    size_t i = upper(t, from);
    uintptr_t pos = from;
    if (i && sd_alloc_start(&t->v[i - 1]) + t->v[i - 1].span > pos)
        pos = sd_alloc_start(&t->v[i - 1]) + t->v[i - 1].span;
    for (; i < t->n && t->v[i].addr < limit; i++) {
        uintptr_t start = sd_alloc_start(&t->v[i]);
        if (start >= pos && start - pos >= span)
            return pos;
        uintptr_t end = start + t->v[i].span;
        if (end > pos)
            pos = end;
    }
    if (pos < limit && limit - pos >= span)
        return pos;
    return 0;
}

int sd_dev_place(struct sd_device *d, size_t span, uintptr_t *out)
{
    int rc = sd_dev_reserve(d);
    if (rc)
        return rc;
    /* A GPU driver places large allocations on 2 MiB boundaries (its page size there). */
    size_t ps = page_size(), align = span >= SD_BIG_ALIGN ? SD_BIG_ALIGN : ps;
    uintptr_t end = d->base + d->range;
    uintptr_t at = gap_from(&d->allocs, d->cursor, end, span + align - ps);
    if (!at)
        at = gap_from(&d->allocs, d->base, end, span + align - ps);
    if (!at)
        return SD_ENOMEM;
    at = (at + align - 1) / align * align;
    d->cursor = at + span >= end ? d->base : at + span;
    *out = at;
    return SD_OK;
}

/* The shared pages that hold `bytes` of small blocks: the driver packs blocks under its page
 * into common pages; this counts them as packed without a gap, the least a GPU can use. */
static size_t packed_pages(size_t bytes)
{
    return (bytes + SD_BIG_ALIGN - 1) / SD_BIG_ALIGN * SD_BIG_ALIGN;
}

/* What a block of n bytes takes from the device's capacity. A GPU backs cuMemAlloc memory with
 * its 2 MiB pages: a block of a page or more is rounded up to whole pages (on an H100 a block of
 * 3 MiB and 1000 bytes is one mapping of 4 MiB, docs/gpu.md finding 14), smaller ones share
 * pages. Stream-ordered blocks are their pool's business (sd_pool_alloc.c): 512-rounded. */
static size_t sd_charge(struct sd_device *d, size_t n, bool async, bool *packed)
{
    size_t rsize = (n + SD_ALIGN - 1) / SD_ALIGN * SD_ALIGN;
    *packed = !async && n < SD_BIG_ALIGN;
    if (async)
        return rsize;
    if (!*packed)
        return packed_pages(rsize);
    return packed_pages(d->packed_bytes + rsize) - packed_pages(d->packed_bytes);
}

int sd_dev_alloc(struct sd_device *d, size_t n, bool async, void **out)
{
    int rc = sd_dev_reserve(d);
    if (rc)
        return rc;
    bool packed;
    size_t rsize = (n + SD_ALIGN - 1) / SD_ALIGN * SD_ALIGN;
    size_t charge = sd_charge(d, n, async, &packed);
    size_t ps = page_size();
    if (n > d->range || !sd_dev_fits(d, charge)) {
        d->c.oom++;
        return SD_ENOMEM;
    }
    /* SIMDEV_BASE_OFFSET: a large allocation starts past its boundary, as chipStar's and
     * ROCm's segment bases were seen to (aligned to 128 bytes only); smaller ones do not. */
    size_t lead = !async && n >= SD_BIG_ALIGN ? sd_cfg.base_offset : 0;
    size_t span = (lead + rsize + ps - 1) / ps * ps;
    uintptr_t at = 0;
    if (sd_dev_place(d, span, &at) != SD_OK ||
        mprotect((void *)at, span, PROT_READ | PROT_WRITE) != 0) {
        d->c.oom++;
        return SD_ENOMEM;
    }
    struct sd_alloc a = {.addr = at + lead, .size = n, .rsize = packed ? rsize : charge,
                         .span = span, .lead = lead, .packed = packed, .async = async,
                         .owner = sd_owner_get()};
    if (sd_table_insert(&d->allocs, &a) != 0) {
        mprotect((void *)at, span, PROT_NONE);
        d->c.oom++;
        return SD_ENOMEM;
    }
    if (packed)
        d->packed_bytes += rsize;
    sd_dev_grow(d, charge);
    *out = (void *)(at + lead);
    return SD_OK;
}

/* Here rather than in sd_ipc.c: releasing any allocation may need it, and the IPC calls sit
 * above the address space. */
void sd_ipc_unback(uintptr_t addr, size_t span, int ipc, int fd)
{
    mmap((void *)addr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
         -1, 0);
    if (ipc == SD_IPC_EXPORTED)
        close(fd);
}

void sd_dev_release(struct sd_device *d, uintptr_t addr)
{
    struct sd_alloc *a = sd_table_find_start(&d->allocs, addr);
    if (!a)
        return;
    size_t span = a->span, rsize = a->rsize, size = a->size;
    uintptr_t start = sd_alloc_start(a);
    if (a->packed) { /* the shared pages this block alone kept */
        rsize = packed_pages(d->packed_bytes) - packed_pages(d->packed_bytes - a->rsize);
        d->packed_bytes -= a->rsize;
    }
    struct sd_pool *pool = a->pool;
    int ipc = a->ipc, fd = a->fd;
    sd_table_remove(&d->allocs, addr);
    /* Writers wait for in-flight copies; they hold sd_lock, so no reader can start meanwhile. */
    pthread_rwlock_wrlock(&d->access);
    if (ipc)
        sd_ipc_unback(start, span, ipc, fd);
    else {
        madvise((void *)start, span, MADV_DONTNEED);
        mprotect((void *)start, span, PROT_NONE);
    }
    pthread_rwlock_unlock(&d->access);
    d->freed[d->freed_next % 64].addr = addr;
    d->freed[d->freed_next % 64].size = size;
    d->freed_next++;
    /* Bytes back in a pool stay the device's: other processes never see them free meanwhile. */
    if (pool)
        sd_pool_returned(pool, rsize);
    else
        sd_dev_shrink(d, rsize);
}

/* Why graph memory a refuses an access now, or NULL: it is accessible only between a launch's
 * allocation and free nodes, which set `mapped` (sd_graph_mem.c). */
static const char *gmem_refusal(const struct sd_alloc *a)
{
    return a->graph && !a->mapped ? "graph memory outside a launch's allocation and free"
                                  : NULL;
}

bool sd_dev_check_access(struct sd_device *d, struct sd_device *owner, const char *what,
                         uintptr_t p, size_t n, bool write)
{
    struct sd_alloc *a = sd_table_find_containing(&owner->allocs, p);
    const char *graph_no = a ? gmem_refusal(a) : NULL;
    if (a && !graph_no && n <= a->size - (p - a->addr))
        return true;
    char why[160];
    if (graph_no) {
        snprintf(why, sizeof why, "%s", graph_no);
    } else if (!a && sd_vmm_holds(p)) {
        const char *no = sd_vmm_refusal(p, n, d->id, write);
        if (!no)
            return true;
        snprintf(why, sizeof why, "%s", no);
    } else if (a) {
        snprintf(why, sizeof why, "out of bounds of the allocation of %zu bytes at %p", a->size,
                 (void *)a->addr);
    } else {
        snprintf(why, sizeof why, "%s", "never allocated");
        for (unsigned i = 0; i < 64; i++)
            if (owner->freed[i].addr && p >= owner->freed[i].addr &&
                p - owner->freed[i].addr < (owner->freed[i].size ? owner->freed[i].size : 1)) {
                snprintf(why, sizeof why, "%s", "freed memory");
                break;
            }
    }
    fprintf(stderr, "simdevice: illegal address: %s of %zu bytes at %p on device %d (%s)\n", what,
            n, (void *)p, owner->id, why);
    d->c.faults++;
    d->sticky = SD_EILLEGAL;
    return false;
}
