/* sd_vmm_internal.h: what the VMM files share. sd_vmm_space.c owns the address region with its
 * reservations and mappings, sd_vmm_phys.c the physical memory behind handles, sd_vmm.c the
 * entry points. Everything here is used under sd_lock. */
#ifndef SD_VMM_INTERNAL_H
#define SD_VMM_INTERNAL_H

#include <sys/types.h>

#include "sd_internal.h"

/* The 2 MiB large page of current GPUs: what cuMemGetAllocationGranularity reports. */
#define SD_VMM_GRANULE ((size_t)2 << 20)

/* Physical memory behind a handle: a range of the process's one memfd, so that two mappings
 * of it show the same bytes; or, for memory that may be shared with other processes (created
 * with the POSIX descriptor type, or imported), a memfd of its own that they map too. */
struct vmm_phys {
    int dev;
    size_t size;
    off_t file_off; /* in the process's memfd; unused with fd */
    int fd;         /* its own memfd, or -1 */
    bool shareable; /* may be exported: its handle type is the POSIX descriptor */
    bool imported;  /* another handle's memory: not counted against this process's capacity */
    unsigned refs;  /* creation, import and retains not yet released; the handle names the
                     * memory while there is one */
    unsigned maps;  /* live mappings of it; the memory goes when both are 0 */
    struct vmm_phys *next, *prev; /* every live one, so a device reset finds its own */
};

/* A reservation (phys NULL) or a mapping of [offset, offset+size) of phys at addr. */
struct vmm_span {
    uintptr_t addr;
    size_t size;
    struct vmm_phys *phys;
    size_t offset;
    uint64_t readers, writers; /* one bit per device: read, read-write access */
};

/* Spans sorted by address, none overlapping. */
struct vmm_spans {
    struct vmm_span *v;
    size_t n, cap;
};

extern struct vmm_spans sd_vmm_reservations, sd_vmm_mappings;

/* Index of the first span of t starting above p. */
size_t vmm_upper(const struct vmm_spans *t, uintptr_t p);
/* The span of t holding p, or NULL. */
struct vmm_span *vmm_containing(struct vmm_spans *t, uintptr_t p);
/* Whether [p, p+n) meets a span of t. */
bool vmm_overlaps(const struct vmm_spans *t, uintptr_t p, size_t n);
/* Inserts s in order; -1 when out of memory. */
int vmm_insert(struct vmm_spans *t, const struct vmm_span *s);
/* Removes the `count` spans starting at index i. */
void vmm_cut(struct vmm_spans *t, size_t i, size_t count);
/* Finds the whole, back-to-back mappings that make up exactly [p, p+n): their first index and
 * count. False when the range cuts a mapping or has a hole. */
bool vmm_run(uintptr_t p, size_t n, size_t *first, size_t *count);
/* Picks a free `align`-aligned range of `size` bytes in the region (reserved at first use):
 * `hint` when free, else the next free one. SD_ENOMEM when none is left. */
int vmm_place(uintptr_t *at, size_t size, size_t align, uintptr_t hint);
/* Puts the region's inaccessible, unbacked memory back over [p, p+n). */
void vmm_unback(uintptr_t p, size_t n);

/* The record handle `h` names (one with references left), or NULL. */
struct vmm_phys *vmm_phys_of(uint64_t h);
/* Creates physical memory of `size` bytes on d, counted against its capacity; `shareable`
 * gives it a memfd of its own that vmm_phys_export hands out. */
int vmm_phys_new(struct sd_device *d, size_t size, bool shareable, struct vmm_phys **out);
/* A new descriptor of ph's own memfd for the caller; SD_EINVAL when ph is not shareable. */
int vmm_phys_export(const struct vmm_phys *ph, int *fd);
/* Physical memory over another handle's memfd that `fd` names (exported by this process or
 * another), not counted against capacity; SD_EINVAL when fd is not such a memfd. */
int vmm_phys_import(int fd, struct vmm_phys **out);
/* Makes [p, p+size) show bytes [offset, offset+size) of ph, inaccessible for now. */
int vmm_phys_map(const struct vmm_phys *ph, uintptr_t p, size_t size, size_t offset);
/* One more reference to ph; the handle names it again if it no longer did. SD_ENOMEM when
 * the handle cannot be recorded. */
int vmm_phys_retain(struct vmm_phys *ph);
/* Drops one reference; after the last, the handle no longer names ph. */
void vmm_phys_release(struct vmm_phys *ph);
/* Drops every reference left (a device reset). */
void vmm_phys_forget(struct vmm_phys *ph);
/* Frees ph once no reference is left and it is unmapped everywhere. */
void vmm_phys_put(struct vmm_phys *ph);
/* The first live handle of device d, or NULL. */
struct vmm_phys *vmm_phys_first_of(const struct sd_device *d);

#endif
