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

void top_report_prometheus(FILE *out, const top_list *l)
{
#define CA_PROM_FAMILY_(name, kind, help)                                                     \
    fprintf(out, "# HELP cachealloc_%s %s.\n# TYPE cachealloc_%s %s\n", #name, help, #name,  \
            #kind[0] == 'C' ? "counter" : "gauge");                                          \
    samples(out, l, #name, #kind[0] == 'C', offsetof(ca_stats_values, name));
    CA_STATS_FIELDS(CA_PROM_FAMILY_)
#undef CA_PROM_FAMILY_
    fputs("# EOF\n", out);
}
