/* The learned policy's decision (src/reuse/price.c) under injected prices: one case for each
 * price profile of the simulated driver (docs/simdevice.md, "Price profiles"), each checking
 * which way it takes, that the way that loses costs little in tries, and that a change of the
 * program's streams is followed.
 *
 * A case prices the two ways as the arena pays them in bench-loop's one-thread loop (one block
 * freed and asked for again a pair, memory bounded at twice the working set):
 *  - device: one synchronization for every `per_sync` pending blocks, costing its call plus
 *    the queued work it waits out;
 *  - events: at each allocation after a free, a fence (a record on the legacy stream and on
 *    each busy stream, a query of each idle created stream), a poll of the fences, and, when
 *    the oldest fence has not completed by the time memory runs short, a wait for it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "reuse/reuse.h"

typedef struct prices {
    const char *profile;
    double sync_us;      /* a device synchronization's call                     */
    double queued_us;    /* queued work a synchronization waits out             */
    int per_sync;        /* pending blocks each synchronization makes reusable  */
    double record_us, query_us;
    int busy, idle;      /* created streams with work queued, and without       */
    double fence_wait_us; /* a fence's wait when memory runs short, per block   */
} prices;

static uint64_t ns(double us) { return (uint64_t)(us * 1000.0 + 0.5); }

/* One pair of the loop under the way in force: what it spends, then what it makes reusable.
 * Returns the way that paid. */
static ca_fences_kind pair(ca_reuse_price *p, const prices *c, int *owed)
{
    ca_fences_kind w = (ca_fences_kind)p->way;
    if (w == CA_FENCES_DEVICE) {
        if (++*owed >= c->per_sync) { /* over the budget: one synchronization frees them all */
            ca_price_spent(p, ns(c->sync_us + c->queued_us));
            ca_price_released(p, (uint32_t)*owed);
            *owed = 0;
        }
        return w;
    }
    *owed = 0;
    ca_price_spent(p, ns(c->record_us * (1 + c->busy) + c->query_us * (c->idle + 1) +
                         c->fence_wait_us));
    ca_price_released(p, 1);
    return w;
}

/* Runs n pairs; returns how many were paid by `way`. */
static int run(ca_reuse_price *p, const prices *c, int n, ca_fences_kind way)
{
    int owed = 0, paid = 0;
    for (int i = 0; i < n; i++)
        paid += pair(p, c, &owed) == way;
    return paid;
}

/* After a warm-up the expected way is in force, and the other was paid for at most a tenth of
 * the pairs (its tries back off). */
static void takes(const prices *c, ca_fences_kind expected)
{
    ca_reuse_price p;
    ca_price_init(&p);
    run(&p, c, 2000, expected);
    int n = 20000;
    int paid = run(&p, c, n, expected);
    if (p.trying) /* a try may be under way at the end: it ends, and the way comes back */
        run(&p, c, 200, expected);
    print_message("%s: way %d, %.1f%% of pairs the other way, %llu/%llu ns a block\n",
                  c->profile, p.way, 100.0 * (n - paid) / n,
                  (unsigned long long)p.per_block_ns[CA_FENCES_DEVICE],
                  (unsigned long long)p.per_block_ns[CA_FENCES_EVENTS]);
    assert_int_equal(p.way, expected);
    assert_true(n - paid <= n / 10);
    assert_true(p.per_block_ns[CA_FENCES_DEVICE] > 0 && p.per_block_ns[CA_FENCES_EVENTS] > 0);
}

/* provisional, as the learner measured it in bench-loop's one-thread loop beside two idle
 * streams on the simulated driver (0.34 to 0.7 us a block by synchronizing every fourth pair,
 * 1.2 to 3.5 us by fences): a synchronization's 1 us floor with the simulator's own time, and
 * the records' and queries' floors (0.35, 0.15 us) about doubled the same way. */
static const prices provisional = {"provisional", 1.4, 0.2, 4, 0.6, 0.3, 0, 2, 0};

/* Beside a busy stream (provisional prices, 20 us kernels two deep), a synchronization waits
 * out the queue; the fence on the busy stream is waited for too, a block at a time. */
static const prices provisional_busy = {"provisional, one busy", 1, 30, 4, 0.35, 0.15, 1, 1, 25};

/* gpu: an idle device synchronizes in a few microseconds (docs/gpu.md), fence calls cost
 * about a microsecond each. */
static const prices gpu = {"gpu", 4, 3, 4, 1.2, 0.8, 0, 2, 0};

/* sync-dear: every device synchronization waits out a 1 ms kernel of another stream, half of
 * it on average; the fences' own streams finish their short work long before it is needed. */
static const prices sync_dear = {"sync-dear", 500, 3, 4, 0.35, 0.15, 0, 2, 0};

/* events-dear: 5 us a record, 3 us a query. */
static const prices events_dear = {"events-dear", 1, 3, 4, 5, 3, 0, 2, 0};

static void test_provisional(void **state) { (void)state; takes(&provisional, CA_FENCES_DEVICE); }
static void test_provisional_busy(void **state)
{
    (void)state;
    takes(&provisional_busy, CA_FENCES_DEVICE);
}
static void test_gpu(void **state) { (void)state; takes(&gpu, CA_FENCES_DEVICE); }
static void test_sync_dear(void **state) { (void)state; takes(&sync_dear, CA_FENCES_EVENTS); }
static void test_events_dear(void **state) { (void)state; takes(&events_dear, CA_FENCES_DEVICE); }

/* The program's streams change: synchronizations become dear halfway (another stream starts
 * long kernels), and the learner moves to fences within a few tries; when they are cheap
 * again, back. */
static void test_follows_a_change(void **state)
{
    (void)state;
    ca_reuse_price p;
    ca_price_init(&p);
    run(&p, &provisional, 20000, CA_FENCES_DEVICE);
    assert_int_equal(p.way, CA_FENCES_DEVICE);
    /* The tries have backed off to their longest interval: 64 epochs of 64 blocks. */
    run(&p, &sync_dear, 2 * 65 * 64, CA_FENCES_EVENTS);
    assert_int_equal(p.way, CA_FENCES_EVENTS);
    run(&p, &provisional, 4 * 64, CA_FENCES_DEVICE);
    run(&p, &provisional, 2 * 65 * 64, CA_FENCES_DEVICE);
    if (p.trying)
        run(&p, &provisional, 200, CA_FENCES_DEVICE);
    assert_int_equal(p.way, CA_FENCES_DEVICE);
}

/* The margin: two ways within a tenth of each other do not swap; a clearly cheaper one wins;
 * an unknown figure never wins over a known one. */
static void test_cheaper(void **state)
{
    (void)state;
    uint64_t c[2];
    c[CA_FENCES_DEVICE] = 1000, c[CA_FENCES_EVENTS] = 950;
    assert_int_equal(ca_price_cheaper(c, CA_FENCES_DEVICE), CA_FENCES_DEVICE);
    assert_int_equal(ca_price_cheaper(c, CA_FENCES_EVENTS), CA_FENCES_EVENTS);
    c[CA_FENCES_EVENTS] = 800;
    assert_int_equal(ca_price_cheaper(c, CA_FENCES_DEVICE), CA_FENCES_EVENTS);
    c[CA_FENCES_EVENTS] = 0;
    assert_int_equal(ca_price_cheaper(c, CA_FENCES_DEVICE), CA_FENCES_DEVICE);
    c[CA_FENCES_DEVICE] = 0, c[CA_FENCES_EVENTS] = 5;
    assert_int_equal(ca_price_cheaper(c, CA_FENCES_DEVICE), CA_FENCES_EVENTS);
}

/* An epoch that spends without making anything reusable still ends (50 ms), so a way that
 * only costs is found out. */
static void test_spending_ends_an_epoch(void **state)
{
    (void)state;
    ca_reuse_price p;
    ca_price_init(&p);
    for (int i = 0; i < 60; i++)
        ca_price_spent(&p, 1000000);
    assert_true(p.epochs >= 1);
    assert_int_equal(p.per_block_ns[CA_FENCES_DEVICE], 50000000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_provisional),      cmocka_unit_test(test_provisional_busy),
        cmocka_unit_test(test_gpu),              cmocka_unit_test(test_sync_dear),
        cmocka_unit_test(test_events_dear),      cmocka_unit_test(test_follows_a_change),
        cmocka_unit_test(test_cheaper),          cmocka_unit_test(test_spending_ends_an_epoch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
