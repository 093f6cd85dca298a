/* The learned policy (CACHEALLOC_FENCES=auto): which way of knowing that plain frees are past
 * the device costs this program less, measured as it runs.
 *
 * No price list written in advance chooses well everywhere: beside idle streams a device
 * synchronization costs a few microseconds and frees every pending block at once; beside a
 * busy stream it waits for work the blocks never touched, and fences recorded early complete
 * while the program goes on; where event calls are dear, fences cost more than they save
 * (docs/arena.md, "Pending memory"). So the cache charges the host time each way spends
 * (recording and polling fences, waiting for them, synchronizing) to the way in force, and
 * divides it by the pending blocks that became reusable meanwhile: the cost of one reuse. The
 * cheaper way stays in force; the other is tried for one epoch now and then, half as often each
 * time it loses again, so a program whose streams change is followed and one whose streams do
 * not pays little for the tries (at most one epoch in TRY_MAX + 1).
 *
 * Pure bookkeeping under the device lock: nothing here calls the device. */
#include "reuse/reuse.h"
#include "base/ca_assert.h"

#define EPOCH_BLOCKS 64          /* reuses an epoch averages over                           */
#define EPOCH_NS 50000000u       /* or 50 ms of spending: an epoch that reuses little ends  */
#define TRY_MAX 64               /* most epochs between two tries of the losing way         */

static ca_fences_kind other_way(ca_fences_kind w)
{
    return w == CA_FENCES_DEVICE ? CA_FENCES_EVENTS : CA_FENCES_DEVICE;
}

void ca_price_init(ca_reuse_price *p)
{
    /* The device way first: it records nothing, so a program that never waits pays nothing;
     * the events way is tried after the first epoch. */
    *p = (ca_reuse_price){.way = CA_FENCES_DEVICE, .try_every = 1};
}

ca_fences_kind ca_price_cheaper(const uint64_t per_block_ns[2], ca_fences_kind in_force)
{
    uint64_t mine = per_block_ns[in_force], theirs = per_block_ns[other_way(in_force)];
    if (!theirs)
        return in_force;
    if (!mine)
        return other_way(in_force);
    /* A tenth's margin: two ways within noise of each other do not swap at every epoch. */
    return theirs * 10 < mine * 9 ? other_way(in_force) : in_force;
}

/* The epoch's cost per reuse joins its way's figure; the next epoch's way is chosen. */
static void epoch_end(ca_reuse_price *p)
{
    ca_fences_kind w = (ca_fences_kind)p->way;
    uint64_t cost = p->spent_ns / (p->released ? p->released : 1);
    if (cost == 0)
        cost = 1; /* measured, and nearly free: 0 means unknown */
    uint64_t old = p->per_block_ns[w];
    /* A try measures afresh (the program may have changed since); the way in force averages. */
    p->per_block_ns[w] = old && !p->trying ? (3 * old + cost) / 4 : cost;
    p->epochs++;
    p->released = 0;
    p->spent_ns = 0;
    ca_fences_kind best = ca_price_cheaper(p->per_block_ns, w);
    if (p->trying) {
        p->trying = false;
        p->since_try = 0;
        if (best == w)
            p->try_every = 1; /* the tried way won: the other is tried again soon */
        else if (p->try_every < TRY_MAX)
            p->try_every *= 2;
        p->way = (uint8_t)best;
        return;
    }
    p->way = (uint8_t)best;
    if (++p->since_try >= p->try_every) {
        p->trying = true;
        p->way = (uint8_t)other_way(best);
    }
    ca_assert(p->try_every >= 1 && p->try_every <= TRY_MAX);
}

void ca_price_spent(ca_reuse_price *p, uint64_t ns)
{
    p->spent_ns += ns;
    if (p->spent_ns >= EPOCH_NS)
        epoch_end(p);
}

void ca_price_released(ca_reuse_price *p, uint32_t n)
{
    p->released += n;
    if (p->released >= EPOCH_BLOCKS)
        epoch_end(p);
}
