#include "rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

const char *const top_col_title[COL_COUNT] = {
    "PID", "USER", "DEV", "API", "RESERVED", "ALLOCATED", "CACHED", "PENDING",
    "PEAK", "HIT%", "AVOIDED", "OOMREC", "WAITMS", "COMMAND",
};

const int top_col_width[COL_COUNT] = {7, 8, 4, 4, 10, 10, 10, 10, 10, 6, 8, 6, 9, 0};

unsigned top_rows_build(const top_list *l, top_row **rows)
{
    unsigned n = 0;
    for (unsigned i = 0; i < l->n; i++)
        n += (l->procs[i].ndev ? l->procs[i].ndev : 1) + (l->procs[i].has_host ? 1 : 0);
    *rows = calloc(n ? n : 1, sizeof **rows);
    if (!*rows)
        return 0;
    unsigned k = 0;
    for (unsigned i = 0; i < l->n; i++) {
        const top_proc *p = &l->procs[i];
        if (!p->ndev && !p->has_host)
            (*rows)[k++] = (top_row){p, NULL};
        for (unsigned d = 0; d < p->ndev; d++)
            (*rows)[k++] = (top_row){p, &p->dev[d]};
        if (p->has_host)
            (*rows)[k++] = (top_row){p, &p->host};
    }
    return k;
}

double top_hit_rate(const top_dev *d)
{
    if (!d || d->v.alloc_calls == 0)
        return -1.0;
    return 100.0 * (double)d->v.cache_hits / (double)d->v.alloc_calls;
}

uint64_t top_wait_ns(const top_dev *d)
{
    if (!d || !d->has_waits)
        return 0;
    return d->w.sync_wait_ns + d->w.fence_wait_ns + d->w.grow_ns;
}

uint64_t top_avoided(const top_dev *d)
{
    if (!d || d->v.driver_alloc_calls > d->v.alloc_calls)
        return 0;
    return d->v.alloc_calls - d->v.driver_alloc_calls;
}

static uint64_t num(const top_row *r, top_col c)
{
    const top_dev *d = r->dev;
    if (!d)
        return 0;
    switch (c) {
    case COL_RESERVED: return d->v.reserved_bytes;
    case COL_ALLOCATED: return d->v.allocated_bytes;
    case COL_CACHED: return d->v.cached_bytes;
    case COL_PENDING: return d->v.pending_bytes;
    case COL_PEAK: return d->v.peak_reserved_bytes;
    case COL_AVOIDED: return top_avoided(d);
    case COL_OOM: return d->v.oom_recoveries;
    case COL_WAITS: return top_wait_ns(d);
    case COL_DEV: return d->device;
    default: return 0;
    }
}

static top_col g_sort_col;

static int cmp_rows(const void *a, const void *b)
{
    const top_row *x = a, *y = b;
    int c = 0;
    switch (g_sort_col) {
    case COL_PID:
        break;
    case COL_USER:
        c = (x->proc->uid > y->proc->uid) - (x->proc->uid < y->proc->uid);
        break;
    case COL_API:
        c = strcmp(x->proc->api, y->proc->api);
        break;
    case COL_COMMAND:
        c = strcmp(x->proc->cmdline, y->proc->cmdline);
        break;
    case COL_DEV: {
        uint64_t u = num(x, COL_DEV), v = num(y, COL_DEV);
        c = (u > v) - (u < v);
        break;
    }
    case COL_HIT: {
        double u = top_hit_rate(x->dev), v = top_hit_rate(y->dev);
        c = (u < v) - (u > v);
        break;
    }
    default: {
        uint64_t u = num(x, g_sort_col), v = num(y, g_sort_col);
        c = (u < v) - (u > v);
        break;
    }
    }
    if (c == 0)
        c = (x->proc->pid > y->proc->pid) - (x->proc->pid < y->proc->pid);
    if (c == 0) {
        uint64_t u = num(x, COL_DEV), v = num(y, COL_DEV);
        c = (u > v) - (u < v);
    }
    return c;
}

void top_rows_sort(top_row *rows, unsigned n, top_col col)
{
    g_sort_col = col;
    if (n > 1)
        qsort(rows, n, sizeof *rows, cmp_rows);
}

const char *top_row_status(const top_proc *p)
{
    return !p->alive ? "[dead] " : !p->responding ? "[not responding] " : "";
}

void top_cell(const top_row *r, top_col c, char *buf, size_t len)
{
    const top_dev *d = r->dev;
    if (!d && c != COL_PID && c != COL_USER && c != COL_API && c != COL_COMMAND) {
        snprintf(buf, len, "-");
        return;
    }
    switch (c) {
    case COL_PID: snprintf(buf, len, "%d", r->proc->pid); break;
    case COL_USER: top_user_name(r->proc->uid, buf, len); break;
    case COL_DEV:
        if (d->device == CA_STATS_HOST_DEVICE)
            snprintf(buf, len, "host");
        else
            snprintf(buf, len, "%u", d->device);
        break;
    case COL_API: snprintf(buf, len, "%s", r->proc->alive ? r->proc->api : "dead"); break;
    case COL_HIT: {
        double h = top_hit_rate(d);
        if (h < 0)
            snprintf(buf, len, "-");
        else
            snprintf(buf, len, "%.1f", h);
        break;
    }
    case COL_AVOIDED: snprintf(buf, len, "%llu", (unsigned long long)top_avoided(d)); break;
    case COL_OOM: snprintf(buf, len, "%llu", (unsigned long long)d->v.oom_recoveries); break;
    case COL_WAITS: /* milliseconds; "-" where the writer's ABI predates the figure */
        if (d->has_waits)
            snprintf(buf, len, "%.1f", (double)top_wait_ns(d) / 1e6);
        else
            snprintf(buf, len, "-");
        break;
    case COL_COMMAND: snprintf(buf, len, "%s", r->proc->cmdline); break;
    default: top_human_size(num(r, c), buf, len); break;
    }
}
