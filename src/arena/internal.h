/* The ladder's and the device's administration's own functions, shared by the files of
 * src/arena/ (arena.c's are in arena/ladder.h): what gives memory back (empty segments, free
 * pages of the expandable ranges), the quiet during a capture and the invariants' walk. All of
 * it is above the reuse contract: these may wait, and drop the lock. */
#ifndef CACHEALLOC_ARENA_INTERNAL_H
#define CACHEALLOC_ARENA_INTERNAL_H

#include "arena/arena.h"
#include "reuse/reuse.h"

/* arena/check.c. Under d's lock: every invariant of the device, walked block by block (the
 * accounting, the tiling of each segment, states against the live map, the bins, the exact
 * lists and the pending list); stops the process at the first broken one. Assertion builds
 * only: nothing otherwise. */
#define CA_CHECK_EVERY 256u /* slow allocations per whole walk, a power of two */
#ifdef CA_DEBUG
void ca_device_check(ca_device *d);
#else
static inline void ca_device_check(ca_device *d) { (void)d; }
#endif

/* arena/release.c. Under the lock: detach every empty, reuse-safe segment of d (preallocated
 * ones too when all), up to want bytes, and return them (*n of them) to give back unlocked. */
ca_segment **ca_collect_empty(ca_arena *a, ca_device *d, bool all, uint64_t want, int *n);
/* Not under the lock: give list's n segments back to the driver, free list; bytes released. */
uint64_t ca_release_list(ca_arena *a, ca_device *d, ca_segment **list, int n);

/* arena/unmap.c. The mappings of range s lying wholly inside free memory [from, end), as
 * [*lo, *hi): the highest first, no more of them than make want bytes; false when none does. A
 * mapping ends where the next begins, or at end when open_end (an unmapped page or the range's
 * end follows). What the ladder's unmapping takes from a free block of [from, end). */
bool ca_unmap_whole_mappings(const ca_segment *s, size_t page, uintptr_t from, uintptr_t end,
                             bool open_end, uint64_t want, uintptr_t *lo, uintptr_t *hi);
/* Unmap free pages of d's ranges, up to want bytes (may_sync: also pages not yet proven idle,
 * after a device synchronization). Drops the lock meanwhile. Returns the bytes given back. */
uint64_t ca_unmap_free_pages(ca_arena *a, ca_device *d, uint64_t want, bool may_sync);

/* arena/quiet.c: no backend call while a stream capture is under way (ca_quiet_begin/end). At
 * an allocation: pays a capture's debt, or (while quiet) whether d cannot serve at all. */
bool ca_quiet_refuses(ca_arena *a, ca_device *d);

#endif
