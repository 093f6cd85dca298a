/* The learned policy's decision (src/reuse/price.c) under injected prices: one case for each
 * price profile of the simulated driver (docs/simdevice.md, "Price profiles"), each checking
 * which way it takes, that the way that loses costs little in tries, and that a change of the
 * program's streams is followed. A simulated clock stands for the wall time the policy reads.
 *
 * A case prices a pair of bench-loop's one-thread loop (one block freed and asked for again,
 * memory bounded at twice the working set) as the program's own 5 us plus what the way in
 * force adds:
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

#define PAIR_US 5.0 /* the program's own time a pair */

/* What a pair adds under way w. */
static double added_us(const prices *c, ca_fences_kind w)
{
    if (w == CA_FENCES_DEVICE) /* one synchronization for per_sync pairs */
        return (c->sync_us + c->queued_us) / c->per_sync;
    return c->record_us * (1 + c->busy) + c->query_us * (c->idle + 1) + c->fence_wait_us;
}

/* Runs n pairs on the simulated clock; returns how many were paid by `way`. */
static int run(ca_reuse_price *p, uint64_t *clock, const prices *c, int n, ca_fences_kind way)
{
    int paid = 0;
    for (int i = 0; i < n; i++) {
        ca_fences_kind w = (ca_fences_kind)p->way;
        paid += w == way;
        *clock += ns(PAIR_US + added_us(c, w));
        if (++p->served >= ca_price_due(p))
            ca_price_epoch(p, *clock, 0);
    }
    return paid;
}

/* After a warm-up the expected way is in force, and the other was paid for at most a tenth of
 * the pairs (its tries back off). */
static void takes(const prices *c, ca_fences_kind expected)
{
    ca_reuse_price p;
    uint64_t clock = 1;
    ca_price_init(&p);
    run(&p, &clock, c, 20 * CA_PRICE_EPOCH, expected);
    int n = 200 * CA_PRICE_EPOCH;
    int paid = run(&p, &clock, c, n, expected);
    if (p.trying) /* a try may be under way at the end: it ends, and the way comes back */
        run(&p, &clock, c, CA_PRICE_EPOCH, expected);
    print_message("%s: way %d, %.1f%% of pairs the other way, %llu/%llu ns an allocation\n",
                  c->profile, p.way, 100.0 * (n - paid) / n,
                  (unsigned long long)p.per_alloc_ns[CA_FENCES_DEVICE],
                  (unsigned long long)p.per_alloc_ns[CA_FENCES_EVENTS]);
    assert_int_equal(p.way, expected);
    assert_true(n - paid <= n / 20);
    assert_true(p.per_alloc_ns[CA_FENCES_DEVICE] > 0 && p.per_alloc_ns[CA_FENCES_EVENTS] > 0);
}

/* provisional: a synchronization's 1 us floor with the simulator's own time, the records' and
 * queries' floors (0.35, 0.15 us) about doubled the same way (the host time the policy measured
 * there at first: 0.34 to 0.7 us a block by synchronizing every fourth pair, 1.2 to 3.5 us by
 * fences). */
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
    uint64_t clock = 1;
    ca_price_init(&p);
    run(&p, &clock, &provisional, 200 * CA_PRICE_EPOCH, CA_FENCES_DEVICE);
    assert_int_equal(p.way, CA_FENCES_DEVICE);
    /* Backed off as far as the tries' share of the time allows: found within 2 intervals. */
    uint32_t every = p.try_every;
    assert_true(every >= 32 && every <= 1024);
    run(&p, &clock, &sync_dear, (int)(2 * (every + 1)) * CA_PRICE_EPOCH, CA_FENCES_EVENTS);
    assert_int_equal(p.way, CA_FENCES_EVENTS);
    run(&p, &clock, &provisional, 2 * 1025 * CA_PRICE_EPOCH, CA_FENCES_DEVICE);
    if (p.trying)
        run(&p, &clock, &provisional, CA_PRICE_EPOCH, CA_FENCES_DEVICE);
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

/* The first epoch only starts the clock: an epoch measured from the device's first allocation
 * would count the time before it. */
static void test_first_epoch_starts_the_clock(void **state)
{
    (void)state;
    ca_reuse_price p;
    ca_price_init(&p);
    p.served = CA_PRICE_EPOCH;
    ca_price_epoch(&p, 1000000, 0);
    assert_int_equal(p.epochs, 0);
    assert_int_equal(p.served, 0);
    /* Until both ways have a figure, epochs are an eighth long. */
    assert_int_equal(ca_price_due(&p), CA_PRICE_EPOCH / 8);
    p.served = CA_PRICE_EPOCH / 8;
    ca_price_epoch(&p, 1000000 + 64 * 3000, 0);
    assert_int_equal(p.epochs, 1);
    assert_int_equal(p.per_alloc_ns[CA_FENCES_DEVICE], 3000);
    assert_int_equal(p.way, CA_FENCES_EVENTS); /* tried after the first epoch */
    /* The new way settles an eighth of an epoch untimed, then its try is timed. */
    assert_int_equal(ca_price_due(&p), CA_PRICE_EPOCH / 8);
    p.served = CA_PRICE_EPOCH / 8;
    ca_price_epoch(&p, 2000000, 0);
    assert_int_equal(p.epochs, 1);
    p.served = CA_PRICE_EPOCH / 8;
    ca_price_epoch(&p, 2000000 + 64 * 9000, 0);
    assert_int_equal(p.per_alloc_ns[CA_FENCES_EVENTS], 9000);
    assert_int_equal(p.way, CA_FENCES_DEVICE); /* it lost */
    assert_int_equal(ca_price_due(&p), CA_PRICE_EPOCH / 8); /* settling, then whole epochs */
}

/* An epoch in which the device grew is not timed: the warm-up's growths, made under the device
 * way that is in force first, would make it look dearer than it is. After CA_PRICE_GROWN such
 * epochs in a row the next is timed anyway, so that a program that always grows still learns. */
static void test_growth_epochs_untimed(void **state)
{
    (void)state;
    ca_reuse_price p;
    uint64_t clock = 1000000, growths = 0;
    ca_price_init(&p);
    ca_price_epoch(&p, clock, growths); /* starts the clock */
    for (uint32_t i = 0; i < CA_PRICE_GROWN; i++) {
        p.served = CA_PRICE_EPOCH / 8;
        clock += 64 * 50000; /* a dear epoch: it grew */
        ca_price_epoch(&p, clock, ++growths);
        assert_int_equal(p.epochs, 0);
        assert_int_equal(p.per_alloc_ns[CA_FENCES_DEVICE], 0);
        assert_int_equal(p.way, CA_FENCES_DEVICE);
    }
    /* One more growth than the rule skips: this epoch is timed. */
    p.served = CA_PRICE_EPOCH / 8;
    clock += 64 * 4000;
    ca_price_epoch(&p, clock, ++growths);
    assert_int_equal(p.epochs, 1);
    assert_int_equal(p.per_alloc_ns[CA_FENCES_DEVICE], 4000);
    /* After a timed epoch, a growth is skipped again, and one without growth is timed. */
    p.served = CA_PRICE_EPOCH / 8;
    ca_price_epoch(&p, clock + 1000, growths); /* the events way settles */
    p.served = CA_PRICE_EPOCH / 8;
    ca_price_epoch(&p, clock + 2000 + 64 * 50000, ++growths);
    assert_int_equal(p.epochs, 1);
    assert_int_equal(p.per_alloc_ns[CA_FENCES_EVENTS], 0);
    p.served = CA_PRICE_EPOCH / 8;
    ca_price_epoch(&p, clock + 2000 + 64 * 50000 + 64 * 3000, growths);
    assert_int_equal(p.epochs, 2);
    assert_int_equal(p.per_alloc_ns[CA_FENCES_EVENTS], 3000);
    assert_int_equal(p.way, CA_FENCES_EVENTS); /* cheaper than the device's 4000 */
}

/* A way that lost once on a figure taken in the program's first moments is tried again soon:
 * its tries may take about a thirty-second of the time, and a try (its settling and its timed
 * eighth) is a quarter of an epoch at its price; once it lost twice, they are further apart. Here the device way's first eighth cost 49 us
 * an allocation and the events way's try 21 us: the device way comes back for a try after
 * 1 + 32 x 28 / (4 x 21) = 11 epochs, not after 64. */
static void test_loser_tried_within_its_share(void **state)
{
    (void)state;
    ca_reuse_price p;
    uint64_t clock = 1000000;
    ca_price_init(&p);
    ca_price_epoch(&p, clock, 0); /* starts the clock */
    p.served = CA_PRICE_EPOCH / 8;
    clock += 64 * 49000;
    ca_price_epoch(&p, clock, 0);
    p.served = CA_PRICE_EPOCH / 8;
    ca_price_epoch(&p, clock += 1000, 0); /* the events way settles */
    p.served = CA_PRICE_EPOCH / 8;
    clock += 64 * 21000;
    ca_price_epoch(&p, clock, 0);
    assert_int_equal(p.way, CA_FENCES_EVENTS);
    assert_false(p.trying);
    int epochs = 0;
    while (!p.trying && epochs < 100) {
        p.served = ca_price_due(&p);
        clock += (uint64_t)p.served * 21000;
        ca_price_epoch(&p, clock, 0);
        epochs++;
    }
    assert_true(p.trying);
    assert_int_equal(p.way, CA_FENCES_DEVICE);
    assert_in_range(epochs, 10, 13);
    /* It loses on a second figure: from then on its tries stay 32 times the ratio of the
     * figures apart (49 / 21 is 2 in whole numbers), the model's floor no longer. */
    p.served = CA_PRICE_EPOCH / 8;
    ca_price_epoch(&p, clock += 1000, 0); /* settles */
    p.served = CA_PRICE_EPOCH / 8;
    clock += 64 * 49000;
    ca_price_epoch(&p, clock, 0);
    assert_false(p.trying);
    assert_int_equal(p.way, CA_FENCES_EVENTS);
    assert_int_equal(p.try_every, 64);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_provisional),      cmocka_unit_test(test_provisional_busy),
        cmocka_unit_test(test_gpu),              cmocka_unit_test(test_sync_dear),
        cmocka_unit_test(test_events_dear),      cmocka_unit_test(test_follows_a_change),
        cmocka_unit_test(test_cheaper),          cmocka_unit_test(test_first_epoch_starts_the_clock),
        cmocka_unit_test(test_growth_epochs_untimed),
        cmocka_unit_test(test_loser_tried_within_its_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
