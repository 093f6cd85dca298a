/* sd_vmm_space.c: the VMM address region. One PROT_NONE, MAP_NORESERVE range for the whole
 * process (reservations are not bound to a device), taken at the first reservation; the
 * reservations and mappings inside it, and what a device access there may touch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sd_sorted.h"
#include "sd_vmm_internal.h"

_Static_assert(offsetof(struct vmm_span, addr) == 0, "spans are address-ordered records");

struct vmm_spans sd_vmm_reservations, sd_vmm_mappings;

/* The whole mapping [lo, hi), and the granule-aligned part reservations are carved from. */
static uintptr_t lo, hi, base, end, cursor;

/* An eighth of a 47-bit address space: room for the devices' own ranges and the program. */
#define REGION_CAP ((size_t)16 << 40)

size_t vmm_upper(const struct vmm_spans *t, uintptr_t p)
{
    return sd_sorted_upper(t->v, t->n, sizeof *t->v, p);
}

struct vmm_span *vmm_containing(struct vmm_spans *t, uintptr_t p)
{
    size_t i = vmm_upper(t, p);
    if (i && p - t->v[i - 1].addr < t->v[i - 1].size)
        return &t->v[i - 1];
    return NULL;
}

bool vmm_overlaps(const struct vmm_spans *t, uintptr_t p, size_t n)
{
    size_t i = vmm_upper(t, p);
    if (i && t->v[i - 1].addr + t->v[i - 1].size > p)
        return true;
    return i < t->n && t->v[i].addr - p < n;
}

int vmm_insert(struct vmm_spans *t, const struct vmm_span *s)
{
    struct vmm_span *v = sd_sorted_insert(t->v, &t->n, &t->cap, sizeof *t->v, s);
    if (!v)
        return -1;
    t->v = v;
    return 0;
}

void vmm_cut(struct vmm_spans *t, size_t i, size_t count)
{
    sd_sorted_cut(t->v, &t->n, sizeof *t->v, i, count);
}

bool vmm_run(uintptr_t p, size_t n, size_t *first, size_t *count)
{
    const struct vmm_spans *t = &sd_vmm_mappings;
    size_t i = vmm_upper(t, p);
    if (!n || !i || t->v[i - 1].addr != p)
        return false;
    *first = i - 1;
    uintptr_t at = p;
    for (size_t j = i - 1; j < t->n && t->v[j].addr == at; j++) {
        if (t->v[j].size > n - (at - p))
            return false; /* the range ends inside this mapping */
        at += t->v[j].size;
        if (at - p == n) {
            *count = j - *first + 1;
            return true;
        }
    }
    return false;
}

/* Reserves the region: 64 times every device's capacity, so that programs reserving a
 * device's worth of addresses per pool (PyTorch's expandable segments) fit, halved until the
 * kernel grants it. */
static int region_reserve(void)
{
    if (lo)
        return SD_OK;
    size_t want = sd_cfg.memory * 64 * (size_t)(sd_cfg.devices ? sd_cfg.devices : 1);
    if (want > REGION_CAP)
        want = REGION_CAP;
    for (; want >= 64 * SD_VMM_GRANULE; want /= 2) {
        size_t len = want + SD_VMM_GRANULE; /* slack to align the start to a granule */
        void *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
            continue;
        lo = (uintptr_t)m;
        hi = lo + len;
        base = (lo + SD_VMM_GRANULE - 1) & ~(SD_VMM_GRANULE - 1);
        end = base + want;
        cursor = base;
        return SD_OK;
    }
    fprintf(stderr, "simdevice: cannot reserve address space for virtual memory management\n");
    return SD_ENOMEM;
}

/* First `align`-aligned free range of `size` bytes in [from, end), or 0. */
static uintptr_t gap_from(uintptr_t from, size_t size, size_t align)
{
    const struct vmm_spans *t = &sd_vmm_reservations;
    size_t i = vmm_upper(t, from);
    uintptr_t pos = from;
    if (i && t->v[i - 1].addr + t->v[i - 1].size > pos)
        pos = t->v[i - 1].addr + t->v[i - 1].size;
    for (;; i++) {
        pos = (pos + align - 1) & ~(uintptr_t)(align - 1);
        uintptr_t next = i < t->n ? t->v[i].addr : end;
        if (pos <= next && next - pos >= size)
            return pos;
        if (i >= t->n)
            return 0;
        if (t->v[i].addr + t->v[i].size > pos)
            pos = t->v[i].addr + t->v[i].size;
    }
}

int vmm_place(uintptr_t *at, size_t size, size_t align, uintptr_t hint)
{
    int rc = region_reserve();
    if (rc)
        return rc;
    if (size > end - base)
        return SD_ENOMEM;
    if (hint && hint % align == 0 && hint >= base && hint <= end - size &&
        !vmm_overlaps(&sd_vmm_reservations, hint, size)) {
        *at = hint;
        return SD_OK;
    }
    /* Next-fit, as device allocations are: a freed range is not handed out again at once. */
    uintptr_t p = gap_from(cursor, size, align);
    if (!p)
        p = gap_from(base, size, align);
    if (!p)
        return SD_ENOMEM;
    *at = p;
    cursor = p + size;
    return SD_OK;
}

void vmm_unback(uintptr_t p, size_t n)
{
    if (mmap((void *)p, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
             -1, 0) == MAP_FAILED)
        fprintf(stderr, "simdevice: cannot unmap %zu bytes at %p\n", n, (void *)p);
}

bool sd_vmm_holds(uintptr_t p)
{
    return p >= lo && p < hi;
}

struct sd_device *sd_vmm_dev_of(uintptr_t p)
{
    if (!sd_vmm_holds(p))
        return NULL;
    struct vmm_span *m = vmm_containing(&sd_vmm_mappings, p);
    return m ? &sd_dev[m->phys->dev] : sd_cur();
}

bool sd_vmm_mapped(uintptr_t p)
{
    return sd_vmm_holds(p) && vmm_containing(&sd_vmm_mappings, p);
}

bool sd_vmm_span_of(uintptr_t p, bool mapping, uintptr_t *base, size_t *size)
{
    struct vmm_spans *t = mapping ? &sd_vmm_mappings : &sd_vmm_reservations;
    const struct vmm_span *m = sd_vmm_holds(p) ? vmm_containing(t, p) : NULL;
    if (m) {
        *base = m->addr;
        *size = m->size;
    }
    return m != NULL;
}

const char *sd_vmm_refusal(uintptr_t p, size_t n, int dev, bool write)
{
    const struct vmm_spans *t = &sd_vmm_mappings;
    uint64_t bit = (uint64_t)1 << dev;
    size_t i = vmm_upper(t, p);
    if (!i || p - t->v[i - 1].addr >= t->v[i - 1].size)
        return "unmapped memory";
    /* Back-to-back mappings form one range, whatever reservations they lie in: the GPU's page
     * tables know no reservations, and growing a buffer by reserving next to it relies on it. */
    for (i--;; i++) {
        const struct vmm_span *m = &t->v[i];
        if (!(m->readers & bit))
            return "mapped memory without access";
        if (write && !(m->writers & bit))
            return "write to read-only mapped memory";
        size_t room = m->addr + m->size - p;
        if (n <= room)
            return NULL;
        n -= room;
        p += room;
        if (i + 1 == t->n || t->v[i + 1].addr != p)
            return "unmapped memory";
    }
}
