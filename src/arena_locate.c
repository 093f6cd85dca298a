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

typedef struct search {
    uintptr_t addr;
    ca_place *out;
} search;

static bool place_in(ca_arena *a, ca_device *d, void *ctx)
{
    (void)a;
    search *q = ctx;
    const ca_segment *seg = ca_segment_find(d, q->addr);
    if (!seg)
        return false;
    const ca_block *b = block_at(seg, q->addr);
    *q->out = (ca_place){.dev = d->id, .seg_base = seg->base, .seg_size = seg->size,
                         .expandable = seg->expandable, .block = b ? b->addr : 0,
                         .live = b && b->state == BLOCK_ALLOC &&
                                 !__atomic_load_n(&b->hot.kept, __ATOMIC_RELAXED)};
    return true;
}

int ca_locate(ca_arena *a, const void *ptr, ca_place *out)
{
    search q = {(uintptr_t)ptr, out};
    return ca_for_each_device_locked(a, place_in, &q) >= 0;
}
