/* OpenMetrics text: one family per field, named cachealloc_<field>; counters carry the
 * mandatory _total suffix on their samples. Dead processes are left out: their numbers are
 * no longer true. */
#include "format.h"
#include "report.h"

static void samples(FILE *out, const top_list *l, const char *name, int counter, size_t off)
{
    for (unsigned i = 0; i < l->n; i++) {
        const top_proc *p = &l->procs[i];
        if (!p->alive)
            continue;
        for (unsigned k = 0; k < p->ndev; k++) {
            uint64_t v = *(const uint64_t *)((const char *)&p->dev[k].v + off);
            fprintf(out, "cachealloc_%s%s{pid=\"%d\",device=\"%u\",command=\"", name,
                    counter ? "_total" : "", p->pid, p->dev[k].device);
            top_label_escape(out, p->cmdline);
            fprintf(out, "\"} %llu\n", (unsigned long long)v);
        }
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

/* The device's memory as each process's driver reports it, where it was published. */
static void device_family(FILE *out, const top_list *l, const char *name, const char *help,
                          int total)
{
    fprintf(out, "# HELP cachealloc_%s %s.\n# TYPE cachealloc_%s gauge\n", name, help, name);
    for (unsigned i = 0; i < l->n; i++) {
        const top_proc *p = &l->procs[i];
        for (unsigned k = 0; p->alive && k < p->ndev; k++) {
            if (!p->dev[k].has_mem)
                continue;
            fprintf(out, "cachealloc_%s{pid=\"%d\",device=\"%u\",command=\"", name, p->pid,
                    p->dev[k].device);
            top_label_escape(out, p->cmdline);
            fprintf(out, "\"} %llu\n", (unsigned long long)(total ? p->dev[k].mem_total
                                                                   : p->dev[k].mem_free));
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
                  1);
    device_family(out, l, "device_free_bytes", "Device memory free, as the driver reports it",
                  0);
    process_family(out, l, "responding", "1 when the process refreshed its statistics lately",
                   0);
    process_family(out, l, "heartbeat_age_seconds", "Age of the process's last snapshot", 1);
    fputs("# EOF\n", out);
}
