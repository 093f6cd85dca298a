/* Which of the arena's segments and blocks hold an address, interior addresses included: what
 * the shim asks before a driver call that names a whole driver allocation (an IPC export),
 * since every segment is one driver allocation that may hold many blocks. */
#include "arena_internal.h"

/* The block of seg holding addr (blocks tile a segment in address order). */
static const ca_block *block_at(const ca_segment *seg, uintptr_t addr)
{
    for (const ca_block *b = seg->first; b; b = b->next)
        if (addr >= b->addr && addr - b->addr < b->size)
            return b;
    return NULL;
}

int ca_locate(ca_arena *a, const void *ptr, ca_place *out)
{
    uintptr_t addr = (uintptr_t)ptr;
    int n = __atomic_load_n(&a->ndev, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++) {
        ca_device *d = ca_device_peek(a, i);
        if (!d)
            continue;
        ca_lock_acquire(&d->lock);
        const ca_segment *seg = ca_segment_find(d, addr);
        if (seg) {
            const ca_block *b = block_at(seg, addr);
            *out = (ca_place){.dev = i, .seg_base = seg->base, .seg_size = seg->size,
                              .expandable = seg->expandable, .block = b ? b->addr : 0,
                              .live = b && b->state == BLOCK_ALLOC &&
                                      !__atomic_load_n(&b->kept, __ATOMIC_RELAXED)};
        }
        ca_lock_release(&d->lock);
        if (seg)
            return 1;
    }
    return 0;
}
