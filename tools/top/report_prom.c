/* Prometheus exposition of the live processes, in either format a scraper may ask for:
 * OpenMetrics 1.0.0 (families named without the counters' _total, which their samples carry;
 * the text ends with "# EOF") or the text format 0.0.4 (a counter's HELP and TYPE name its
 * sample, _total included). One family per statistics field, named cachealloc_<field> in base
 * units: a counter of nanoseconds (kind T of abi.h) is exported in seconds, its _ns become
 * _seconds, and only for writers that publish it (ABI version 5). A process's pinned host
 * memory is a pool of the same families with device="host".
 * Dead processes are left out: their numbers are no longer true. So is a device the process
 * has not named yet (its monitor thread asks the driver in its first round): its series
 * would otherwise change labels, and be two series, within a quarter of a second. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "report.h"

typedef struct prom {
    FILE *out;
    const top_list *l;
    int openmetrics;
    /* The last user name looked up: a name service can be slow, and every sample needs one. */
    unsigned uid;
    char user[64];
} prom;

/* HELP and TYPE of a family; counter names end in _total where the format wants it. */
static void family(const prom *pm, const char *name, const char *help, int counter)
{
    const char *suffix = counter && !pm->openmetrics ? "_total" : "";
    fprintf(pm->out, "# HELP cachealloc_%s%s %s.\n# TYPE cachealloc_%s%s %s\n", name, suffix,
            help, name, suffix, counter ? "counter" : "gauge");
}

/* The labels every sample of process p starts with. */
static void proc_labels(prom *pm, const top_proc *p)
{
    if (!pm->user[0] || pm->uid != p->uid) {
        top_user_name(p->uid, pm->user, sizeof pm->user);
        pm->uid = p->uid;
    }
    fprintf(pm->out, "pid=\"%d\",user=\"", p->pid);
    top_label_escape(pm->out, pm->user);
    fputs("\",command=\"", pm->out);
    top_label_escape(pm->out, p->cmdline);
    fputc('"', pm->out);
}

static void sample(prom *pm, const top_proc *p, const top_dev *d, const char *name,
                   int counter, uint64_t v, int ns)
{
    fprintf(pm->out, "cachealloc_%s%s{", name, counter ? "_total" : "");
    proc_labels(pm, p);
    if (d->device == CA_STATS_HOST_DEVICE)
        fputs(",device=\"host\"", pm->out);
    else
        fprintf(pm->out, ",device=\"%u\"", d->device);
    /* The driver's names, as dcgm-exporter labels its series, so that the two join. */
    if (d->uuid[0]) {
        fputs(",UUID=\"", pm->out);
        top_label_escape(pm->out, d->uuid);
        fputc('"', pm->out);
    }
    if (d->pci_bus_id[0]) {
        fputs(",pci_bus_id=\"", pm->out);
        top_label_escape(pm->out, d->pci_bus_id);
        fputc('"', pm->out);
    }
    if (ns)
        fprintf(pm->out, "} %llu.%09llu\n", (unsigned long long)(v / 1000000000u),
                (unsigned long long)(v % 1000000000u));
    else
        fprintf(pm->out, "} %llu\n", (unsigned long long)v);
}

/* One statistics field of every pool of every live process: the u64 at off in top_dev, of
 * kind G, C or T (abi.h); waits: a field of w, left out where it was not published. */
static void field(prom *pm, const char *name, const char *help, char kind, size_t off,
                  int waits)
{
    char seconds[64];
    size_t len = strlen(name);
    if (kind == 'T' && len > 3 && len - 3 < sizeof seconds - 8) { /* x_ns: x_seconds */
        snprintf(seconds, sizeof seconds, "%.*s_seconds", (int)(len - 3), name);
        name = seconds;
    }
    family(pm, name, help, kind != 'G');
    for (unsigned i = 0; i < pm->l->n; i++) {
        const top_proc *p = &pm->l->procs[i];
        for (unsigned k = 0; p->alive && k <= p->ndev; k++) {
            const top_dev *d = k < p->ndev ? &p->dev[k] : p->has_host ? &p->host : NULL;
            uint64_t v;
            if (!d || (k < p->ndev && !d->named) || (waits && !d->has_waits))
                continue;
            memcpy(&v, (const char *)d + off, sizeof v);
            sample(pm, p, d, name, kind != 'G', v, kind == 'T');
        }
    }
}

/* A per-device figure of each process beside the statistics: the device's memory as its
 * driver reports it (only where it was published), and what it gave its neighbours. */
static void device_field(prom *pm, const char *name, const char *help, size_t offset,
                         int counter)
{
    family(pm, name, help, counter);
    for (unsigned i = 0; i < pm->l->n; i++) {
        const top_proc *p = &pm->l->procs[i];
        for (unsigned k = 0; p->alive && k < p->ndev; k++) {
            if ((!counter && !p->dev[k].has_mem) || !p->dev[k].named)
                continue;
            uint64_t v;
            memcpy(&v, (const char *)&p->dev[k] + offset, sizeof v);
            sample(pm, p, &p->dev[k], name, counter, v, 0);
        }
    }
}

/* One family per process: whether it answers, and how old its last snapshot is. */
static void process_field(prom *pm, const char *name, const char *help, int age)
{
    family(pm, name, help, 0);
    for (unsigned i = 0; i < pm->l->n; i++) {
        const top_proc *p = &pm->l->procs[i];
        if (!p->alive)
            continue;
        fprintf(pm->out, "cachealloc_%s{", name);
        proc_labels(pm, p);
        if (age)
            fprintf(pm->out, "} %llu.%03u\n", (unsigned long long)(p->heartbeat_age_ms / 1000),
                    (unsigned)(p->heartbeat_age_ms % 1000));
        else
            fprintf(pm->out, "} %d\n", p->responding);
    }
}

void top_report_prometheus(FILE *out, const top_list *l, int openmetrics)
{
    prom pm = {out, l, openmetrics, 0, ""};
    /* Base units in the name: the one field whose name lacks them gets them here. */
#define CA_PROM_FAMILY_(name, kind, help)                                                     \
    field(&pm, strcmp(#name, "largest_free_block") ? #name : "largest_free_block_bytes", help, \
          #kind[0], offsetof(top_dev, v) + offsetof(ca_stats_values, name), 0);
    CA_STATS_FIELDS(CA_PROM_FAMILY_)
#undef CA_PROM_FAMILY_
#define CA_PROM_WAIT_(name, kind, help)                                                       \
    field(&pm, #name, help, #kind[0], offsetof(top_dev, w) + offsetof(ca_stats_waits, name), 1);
    CA_STATS_WAIT_FIELDS(CA_PROM_WAIT_)
#undef CA_PROM_WAIT_
    device_field(&pm, "device_total_bytes", "Device memory in all, as the driver reports it",
                 offsetof(top_dev, mem_total), 0);
    device_field(&pm, "device_free_bytes", "Device memory free, as the driver reports it",
                 offsetof(top_dev, mem_free), 0);
    device_field(&pm, "given_to_neighbours_bytes",
                 "Bytes released at other processes' requests", offsetof(top_dev, given), 1);
    process_field(&pm, "responding", "1 when the process refreshed its statistics lately", 0);
    process_field(&pm, "heartbeat_age_seconds", "Age of the process's last snapshot", 1);
    unsigned alive = 0;
    for (unsigned i = 0; i < l->n; i++)
        alive += l->procs[i].alive != 0;
    family(&pm, "exporter_processes", "Live processes whose statistics were read", 0);
    fprintf(out, "cachealloc_exporter_processes %u\n", alive);
    if (openmetrics)
        fputs("# EOF\n", out);
}
