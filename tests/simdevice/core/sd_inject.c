/* sd_inject.c: failures and delays injected on purpose, so that programs can be run while the
 * device misbehaves. The state below is guarded by sd_lock, as the callers hold it. */
#include "sd_internal.h"

enum draw_kind { DRAW_ALLOC, DRAW_EVENT_CREATE, DRAW_EVENT_RECORD, DRAW_KINDS };

static uint64_t drawn[DRAW_KINDS];
static uint64_t alloc_attempts;

/* SplitMix64's output function: consecutive inputs give independent-looking 64-bit values. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* True with probability `rate`. The nth draw of a kind is a pure function of (seed, kind, n):
 * the kinds do not disturb each other, so enabling event failures keeps the allocations that
 * fail unchanged. */
static bool draw(enum draw_kind kind, double rate)
{
    uint64_t n = ++drawn[kind];
    if (rate <= 0)
        return false;
    uint64_t start = mix((uint64_t)sd_cfg.fail_seed * DRAW_KINDS + (uint64_t)kind);
    uint64_t x = mix(start + n * 0x9E3779B97F4A7C15ull);
    return (double)(x >> 11) * 0x1p-53 < rate;
}

static bool injected(struct sd_device *d, bool fail)
{
    if (fail)
        d->c.injected_faults++;
    return fail;
}

bool sd_inject_alloc(struct sd_device *d)
{
    bool nth = (long)++alloc_attempts == sd_cfg.fail_alloc_nth;
    /* Drawn even on the nth attempt, so NTH does not shift which later attempts RATE fails. */
    bool rate = draw(DRAW_ALLOC, sd_cfg.fail_alloc_rate);
    if (!injected(d, nth || rate))
        return false;
    d->c.oom++;
    sd_log("allocation attempt %llu on device %d: injected failure",
           (unsigned long long)alloc_attempts, d->id);
    return true;
}

bool sd_inject_event_create(struct sd_device *d)
{
    return injected(d, draw(DRAW_EVENT_CREATE, sd_cfg.fail_event_create_rate));
}

bool sd_inject_event_record(struct sd_device *d)
{
    return injected(d, draw(DRAW_EVENT_RECORD, sd_cfg.fail_event_record_rate));
}

void sd_inject_sync_delay(void)
{
    sd_spin_us(sd_cfg.sync_delay_us);
}
