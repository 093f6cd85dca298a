/* OpenMetrics text: one family per field, named cachealloc_<field>; counters carry the
 * mandatory _total suffix on their samples. A process's pinned host memory is a pool of the
 * same families with device="host". Dead processes are left out: their numbers are no longer
 * true. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "report.h"

static void sample(FILE *out, const top_proc *p, const top_dev *d, const char *name,
                   int counter, size_t off)
{
    uint64_t v;
    char dev[16];
    memcpy(&v, (const char *)&d->v + off, sizeof v);
    if (d->device == CA_STATS_HOST_DEVICE)
        snprintf(dev, sizeof dev, "host");
    else
        snprintf(dev, sizeof dev, "%u", d->device);
    fprintf(out, "cachealloc_%s%s{pid=\"%d\",device=\"%s\",command=\"", name,
            counter ? "_total" : "", p->pid, dev);
    top_label_escape(out, p->cmdline);
    fprintf(out, "\"} %llu\n", (unsigned long long)v);
}

static void samples(FILE *out, const top_list *l, const char *name, int counter, size_t off)
{
    for (unsigned i = 0; i < l->n; i++) {
        const top_proc *p = &l->procs[i];
        if (!p->alive)
            continue;
        for (unsigned k = 0; k < p->ndev; k++)
            sample(out, p, &p->dev[k], name, counter, off);
        if (p->has_host)
            sample(out, p, &p->host, name, counter, off);
    }
}

/* One family per process: whether it answers, and how old its last snapshot is. */
static void process_family(FILE *out, const top_list *l, const char *name, const char *help,
                           int age)
{
    fprintf(out, "# HELP cachealloc_%s %s.\n# TYPE cachealloc_%s gauge\n", name, help, name);
    for (unsigned i = 0; i < l->n; i++) {
        const top_proc *p = &l->procs[i];
        if (!p->alive)
            continue;
        fprintf(out, "cachealloc_%s{pid=\"%d\",command=\"", name, p->pid);
        top_label_escape(out, p->cmdline);
        if (age)
            fprintf(out, "\"} %llu.%03u\n", (unsigned long long)(p->heartbeat_age_ms / 1000),
                    (unsigned)(p->heartbeat_age_ms % 1000));
        else
            fprintf(out, "\"} %d\n", p->responding);
    }
}

/* A per-device figure of each process beside the statistics: the device's memory as its
 * driver reports it (only where it was published), and what it gave its neighbours. */
static void device_family(FILE *out, const top_list *l, const char *name, const char *help,
                          size_t offset, int counter)
{
    fprintf(out, "# HELP cachealloc_%s %s.\n# TYPE cachealloc_%s %s\n", name, help, name,
            counter ? "counter" : "gauge");
    for (unsigned i = 0; i < l->n; i++) {
        const top_proc *p = &l->procs[i];
        for (unsigned k = 0; p->alive && k < p->ndev; k++) {
            if (!counter && !p->dev[k].has_mem)
                continue;
            uint64_t v;
            memcpy(&v, (const char *)&p->dev[k] + offset, sizeof v);
            fprintf(out, "cachealloc_%s%s{pid=\"%d\",device=\"%u\",command=\"", name,
                    counter ? "_total" : "", p->pid, p->dev[k].device);
            top_label_escape(out, p->cmdline);
            fprintf(out, "\"} %llu\n", (unsigned long long)v);
        }
    }
}

void top_report_prometheus(FILE *out, const top_list *l)
{
#define CA_PROM_FAMILY_(name, kind, help)                                                     \
    fprintf(out, "# HELP cachealloc_%s %s.\n# TYPE cachealloc_%s %s\n", #name, help, #name,  \
            #kind[0] == 'C' ? "counter" : "gauge");                                          \
    samples(out, l, #name, #kind[0] == 'C', offsetof(ca_stats_values, name));
    CA_STATS_FIELDS(CA_PROM_FAMILY_)
#undef CA_PROM_FAMILY_
    device_family(out, l, "device_total_bytes", "Device memory in all, as the driver reports it",
                  offsetof(top_dev, mem_total), 0);
    device_family(out, l, "device_free_bytes", "Device memory free, as the driver reports it",
                  offsetof(top_dev, mem_free), 0);
    device_family(out, l, "given_to_neighbours_bytes",
                  "Bytes released at other processes' requests", offsetof(top_dev, given), 1);
    process_family(out, l, "responding", "1 when the process refreshed its statistics lately",
                   0);
    process_family(out, l, "heartbeat_age_seconds", "Age of the process's last snapshot", 1);
    fputs("# EOF\n", out);
}
