/* The learned policy (CACHEALLOC_FENCES=auto): which way of knowing that plain frees are past
 * the device costs this program less, measured as it runs.
 *
 * No price list written in advance chooses well everywhere: beside idle streams a device
 * synchronization costs a few microseconds and frees every pending block at once; beside a
 * busy stream it waits for work the blocks never touched, and fences recorded early complete
 * while the program goes on; where event calls are dear, fences cost more than they save
 * (docs/arena.md, "Pending memory"). What each way costs is more than its own calls: the
 * threads that queue on the device lock behind a fence's records, the waits several threads
 * make at once, the work the device does for the events. So the cache measures what the
 * program sees, the wall time of an epoch of CA_PRICE_EPOCH allocations on the device, under
 * the way in force. The cheaper way stays in force; the other is tried for an eighth of an
 * epoch now and then, half as often each time it loses again and never so often that its tries
 * take more than about a thirty-second of the time, so a program whose streams change is
 * followed and one whose streams do not pays little for the tries.
 *
 * Pure bookkeeping under the device lock: nothing here calls the device or reads a clock. */
#include "reuse/reuse.h"
#include "base/ca_assert.h"

#define TRY_MAX 1024 /* most epochs between two tries of the losing way               */
#define TRY_SHARE 32 /* a try costs at most about 1/TRY_SHARE of the time between two */

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

ca_fences_kind ca_price_cheaper(const uint64_t per_alloc_ns[2], ca_fences_kind in_force)
{
    uint64_t mine = per_alloc_ns[in_force], theirs = per_alloc_ns[other_way(in_force)];
    if (!theirs)
        return in_force;
    if (!mine)
        return other_way(in_force);
    /* A tenth's margin: two ways within noise of each other do not swap at every epoch. */
    return theirs * 10 < mine * 9 ? other_way(in_force) : in_force;
}

/* The fewest epochs between two tries of the losing way. A try runs a quarter of an epoch under
 * it (its settling and its timed eighth), which costs (loser - best) / best of a quarter epoch
 * more than the best way would have: at 1 + TRY_SHARE times that, tries take about
 * 1/TRY_SHARE of the time. That is the floor while the loser has a single figure, taken in the
 * program's first moments, when threads start and memory grows, and so worth a second look
 * soon. Once it has lost on two figures, its tries stay TRY_SHARE times the ratio of the
 * figures apart: in short runs, the model's floor cost 5 to 10% more than it counts (the
 * switches between ways leave pending memory and fences behind). */
static uint64_t least_every(const ca_reuse_price *p, ca_fences_kind loser, ca_fences_kind best)
{
    uint64_t l = p->per_alloc_ns[loser], b = p->per_alloc_ns[best];
    if (p->timed[loser] > 1)
        return TRY_SHARE * (l / b);
    return 1 + TRY_SHARE * (l > b ? l - b : 0) / (4 * b);
}

/* The next epoch's way, once the one just measured joined its figure. */
static void choose(ca_reuse_price *p, ca_fences_kind measured)
{
    ca_fences_kind best = ca_price_cheaper(p->per_alloc_ns, measured);
    if (p->trying) {
        p->trying = false;
        p->since_try = 0;
        /* The loser is tried again later: half as often as before if it lost again, and never
         * so often that its epochs, as much longer as each of its allocations is, take more
         * than a share of the time (after a clear win of the tried way, the old one too). */
        ca_fences_kind loser = other_way(best);
        uint64_t every = best == measured ? 1 : (uint64_t)p->try_every * 2;
        uint64_t least = least_every(p, loser, best);
        if (every < least)
            every = least;
        p->try_every = every < TRY_MAX ? (uint32_t)every : TRY_MAX;
        p->way = (uint8_t)best;
        return;
    }
    p->way = (uint8_t)best;
    if (++p->since_try >= p->try_every) {
        p->trying = true;
        p->way = (uint8_t)other_way(best);
    }
}

void ca_price_epoch(ca_reuse_price *p, uint64_t now_ns, uint64_t growths)
{
    uint32_t served = p->served;
    p->served = 0;
    /* An epoch in which the device grew is not timed (up to CA_PRICE_GROWN in a row): a growth
     * costs the same under either way, and a program's first epochs grow while the way in
     * force is the device's, whose figure would then be charged with the whole warm-up. */
    bool grew = growths != p->growths0 && p->grown < CA_PRICE_GROWN;
    p->growths0 = growths;
    if (!p->epoch_t0 || now_ns <= p->epoch_t0 || grew) { /* only (re)starts the clock */
        p->grown = grew ? p->grown + 1 : 0;
        p->epoch_t0 = now_ns;
        return;
    }
    p->grown = 0;
    ca_fences_kind w = (ca_fences_kind)p->way;
    uint64_t cost = (now_ns - p->epoch_t0) / (served ? served : 1);
    p->epoch_t0 = now_ns;
    if (cost == 0)
        cost = 1; /* measured, and nearly free: 0 means unknown */
    uint64_t old = p->per_alloc_ns[w];
    /* A try measures afresh (the program may have changed since); the way in force averages. */
    p->per_alloc_ns[w] = old && !p->trying ? (3 * old + cost) / 4 : cost;
    if (p->timed[w] < UINT8_MAX)
        p->timed[w]++;
    p->epochs++;
    choose(p, w);
    /* A new way settles first (what the old one left pending, its fences, is worked off): the
     * next call only starts the clock. */
    if (p->way != w)
        p->epoch_t0 = 0;
    ca_assert(p->try_every >= 1 && p->try_every <= TRY_MAX);
}
