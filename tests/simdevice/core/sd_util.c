/* sd_util.c: time, the busy-wait that models driver cost, verbose logging (with the runtime's
 * name), handle sets. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sd_internal.h"

double sd_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void sd_spin_us(double us)
{
    if (us <= 0)
        return;
    double end = sd_now() + us * 1e-6;
    while (sd_now() < end) {
    }
}

void sd_price_floor(double t0, double us)
{
    double end = t0 + us * 1e-6;
    while (us > 0 && sd_now() < end) {
    }
}

void sd_spin_serial_us(double us)
{
    static pthread_mutex_t serial = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&serial);
    sd_spin_us(us);
    pthread_mutex_unlock(&serial);
}

static const char *flavor = "cuda";

void sd_set_flavor(const char *name)
{
    flavor = name;
}

const char *sd_flavor(void)
{
    return flavor;
}

void sd_log(const char *fmt, ...)
{
    sd_config_init();
    if (!sd_cfg.verbose)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "simdevice[%s]: %s\n", flavor, buf);
}

/* Open addressing with linear probing; 0 marks an empty slot, 1 a deleted one (handles are
 * heap pointers, never 0 or 1). */
static size_t slot_of(uintptr_t p, size_t cap)
{
    uint64_t h = (uint64_t)p * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

bool sd_set_has(const struct sd_set *s, const void *p)
{
    uintptr_t k = (uintptr_t)p;
    if (!s->cap || k <= 1)
        return false;
    for (size_t i = slot_of(k, s->cap), n = 0; n < s->cap; i = (i + 1) & (s->cap - 1), n++) {
        if (s->v[i] == k)
            return true;
        if (s->v[i] == 0)
            return false;
    }
    return false;
}

static int set_put(uintptr_t *v, size_t cap, uintptr_t k)
{
    for (size_t i = slot_of(k, cap);; i = (i + 1) & (cap - 1)) {
        if (v[i] <= 1) {
            v[i] = k;
            return 0;
        }
    }
}

int sd_set_add(struct sd_set *s, const void *p)
{
    if ((s->n + 1) * 2 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        uintptr_t *v = calloc(cap, sizeof *v);
        if (!v)
            return -1;
        size_t n = 0;
        for (size_t i = 0; i < s->cap; i++)
            if (s->v[i] > 1) {
                set_put(v, cap, s->v[i]);
                n++;
            }
        free(s->v);
        s->v = v;
        s->cap = cap;
        s->n = n;
    }
    set_put(s->v, s->cap, (uintptr_t)p);
    s->n++;
    return 0;
}

void sd_set_del(struct sd_set *s, const void *p)
{
    uintptr_t k = (uintptr_t)p;
    if (!s->cap || k <= 1)
        return;
    for (size_t i = slot_of(k, s->cap), n = 0; n < s->cap; i = (i + 1) & (s->cap - 1), n++) {
        if (s->v[i] == k) {
            s->v[i] = 1; /* tombstones keep counting in n until the next rehash */
            return;
        }
        if (s->v[i] == 0)
            return;
    }
}
