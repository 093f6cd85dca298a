/* Processes on one device each report the device's total and free memory; the latest report
 * is the truest, so the one with the newest heartbeat wins (a process that stopped responding
 * has an old one, though what it holds still counts). A dead process holds nothing. */
#include "devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

static top_devsum *find_or_add(top_devsum *sums, unsigned *n, unsigned device)
{
    for (unsigned i = 0; i < *n; i++)
        if (sums[i].device == device)
            return &sums[i];
    top_devsum *s = &sums[(*n)++];
    memset(s, 0, sizeof *s);
    s->device = device;
    return s;
}

static int cmp_device(const void *a, const void *b)
{
    const top_devsum *x = a, *y = b;
    return (x->device > y->device) - (x->device < y->device);
}

unsigned top_devices_sum(const top_list *l, top_devsum **out)
{
    unsigned cap = 0, n = 0;
    for (unsigned i = 0; i < l->n; i++)
        cap += l->procs[i].ndev;
    *out = NULL;
    if (cap == 0)
        return 0;
    top_devsum *sums = calloc(cap, sizeof *sums);
    uint64_t *beat = calloc(cap, sizeof *beat); /* heartbeat of each sum's memory report */
    if (sums == NULL || beat == NULL) {
        free(sums);
        free(beat);
        return 0;
    }
    for (unsigned i = 0; i < l->n; i++) {
        const top_proc *p = &l->procs[i];
        if (!p->alive)
            continue;
        for (unsigned k = 0; k < p->ndev; k++) {
            const top_dev *d = &p->dev[k];
            top_devsum *s = find_or_add(sums, &n, d->device);
            s->reserved += d->v.reserved_bytes;
            s->allocated += d->v.allocated_bytes;
            s->cached += d->v.cached_bytes + d->v.pending_bytes;
            s->given += d->given;
            if (d->has_mem && (!s->has_mem || p->heartbeat_ns >= beat[s - sums])) {
                s->has_mem = 1;
                s->total = d->mem_total;
                s->free = d->mem_free;
                beat[s - sums] = p->heartbeat_ns;
            }
        }
    }
    free(beat);
    if (n == 0) {
        free(sums);
        return 0;
    }
    qsort(sums, n, sizeof *sums, cmp_device);
    *out = sums;
    return n;
}

/* Characters for bytes out of whole, rounded, never more than room. */
static int cells(uint64_t bytes, uint64_t whole, int width, int room)
{
    int c = whole ? (int)((double)bytes / (double)whole * width + 0.5) : 0;
    return c < 0 ? 0 : c > room ? room : c;
}

void top_device_bar(const top_devsum *d, int width, char *buf)
{
    if (width < 1)
        width = 1;
    uint64_t whole = d->has_mem ? d->total : d->reserved;
    uint64_t used = d->has_mem ? d->total - d->free : d->reserved;
    int a = cells(d->allocated, whole, width, width);
    int c = cells(d->cached, whole, width, width - a);
    /* Everything else the driver counts as used: other processes, uncached memory. */
    int o = cells(used, whole, width, width) - a - c;
    if (o < 0)
        o = 0;
    int k = 0;
    buf[k++] = '[';
    for (int i = 0; i < width; i++)
        buf[k++] = i < a ? '|' : i < a + c ? '/' : i < a + c + o ? '#' : ' ';
    buf[k++] = ']';
    buf[k] = '\0';
}

void top_device_text(const top_devsum *d, char *buf, size_t len)
{
    char used[32], total[32], holds[32], idle[32], given[32];
    top_human_size(d->reserved, holds, sizeof holds);
    top_human_size(d->cached, idle, sizeof idle);
    if (!d->has_mem) {
        snprintf(buf, len, "the cache holds %s, %s of it free (device memory not published)",
                 holds, idle);
        return;
    }
    double share = d->total ? 100.0 * (double)d->reserved / (double)d->total : 0.0;
    int n = snprintf(buf, len, "%s used of %s; the cache holds %s (%.1f%%), %s of it free",
                     top_human_size(d->total - d->free, used, sizeof used),
                     top_human_size(d->total, total, sizeof total), holds, share, idle);
    if (d->given && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "; gave %s to neighbours",
                 top_human_size(d->given, given, sizeof given));
}
