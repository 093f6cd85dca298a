/* Which of the arena's segments and blocks hold an address, interior addresses included: what
 * the shim asks before a driver call that names a whole driver allocation (an IPC export),
 * since every segment is one driver allocation that may hold many blocks. */
#include "arena/internal.h"

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
    *q->out = (ca_place){.dev = d->id, .seg_base = ca_seg_driver_base(seg),
                         .seg_size = ca_seg_driver_size(seg),
                         .expandable = seg->expandable, .block = b ? b->addr : 0,
                         .size = b ? b->size : 0, .requested = b ? b->requested : 0,
                         .live = b && b->state == BLOCK_ALLOC &&
                                 !__atomic_load_n(&b->head.kept, __ATOMIC_RELAXED)};
    return true;
}

int ca_locate(ca_arena *a, const void *ptr, ca_place *out)
{
    search q = {(uintptr_t)ptr, out};
    return ca_for_each_device_locked(a, place_in, &q) >= 0;
}

typedef struct pieces {
    uintptr_t block;
    size_t size;
    ca_piece *out;
    int max, n;
} pieces;

/* Under the device lock, so that no mapping of the range changes meanwhile. A live block's
 * pages are all mapped; a mapping begins at a page whose start bit is set and runs until the
 * next such page (ca_range_boundary) or the first unmapped block, so the bits and the blocks
 * alone say which handles hold the block. */
static bool pieces_in(ca_arena *a, ca_device *d, void *ctx)
{
    (void)a;
    pieces *q = ctx;
    const ca_segment *seg = ca_segment_find(d, q->block);
    if (!seg)
        return false;
    const ca_block *b = block_at(seg, q->block);
    if (!seg->expandable || !b || b->addr != q->block || b->size != q->size ||
        b->state != BLOCK_ALLOC || __atomic_load_n(&b->head.kept, __ATOMIC_RELAXED))
        return true; /* q->n stays 0: not the live block that was exported */
    size_t page = d->vmm.page;
    uintptr_t last = seg->base + (b->addr + b->size - 1 - seg->base) / page * page;
    uintptr_t at = seg->base + (b->addr - seg->base) / page * page;
    while (at > seg->base && !ca_range_boundary(seg, page, at))
        at -= page;
    uintptr_t mapped_end = seg->base + seg->size;
    for (const ca_block *n = b->next; n; n = n->next)
        if (n->state == BLOCK_UNMAPPED) {
            mapped_end = n->addr;
            break;
        }
    while (at <= last) {
        uintptr_t next = at + page;
        while (next < mapped_end && !ca_range_boundary(seg, page, next))
            next += page;
        if (q->n == q->max) {
            q->n = -1;
            return true;
        }
        q->out[q->n++] = (ca_piece){at, next - at};
        at = next;
    }
    return true;
}

int ca_mapped_pieces(ca_arena *a, uintptr_t block, size_t size, ca_piece *out, int max)
{
    pieces q = {block, size, out, max, 0};
    return ca_for_each_device_locked(a, pieces_in, &q) >= 0 ? q.n : 0;
}
