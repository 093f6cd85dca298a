#include "format.h"
#include "report.h"

static void field(FILE *out, const char *name, uint64_t v)
{
    fprintf(out, ",\"%s\":%llu", name, (unsigned long long)v);
}

/* A number the writer may not have published (an older ABI, or the question failed). */
static void maybe(FILE *out, const char *name, int known, uint64_t v)
{
    if (known)
        field(out, name, v);
    else
        fprintf(out, ",\"%s\":null", name);
}

/* A device's name as the driver gives it, null when it gave none. */
static void name(FILE *out, const char *key, const char *value)
{
    fprintf(out, ",\"%s\":", key);
    if (value[0])
        top_json_string(out, value);
    else
        fputs("null", out);
}

/* A pool's numbers, a device's or pinned host memory's alike; the time its waits cost is
 * null where the writer's ABI predates it. */
static void pool_fields(FILE *out, const top_dev *d)
{
    const ca_stats_values *v = &d->v;
    field(out, "reserved_bytes", v->reserved_bytes);
    field(out, "allocated_bytes", v->allocated_bytes);
    field(out, "cached_bytes", v->cached_bytes);
    field(out, "pending_bytes", v->pending_bytes);
    field(out, "peak_reserved_bytes", v->peak_reserved_bytes);
    field(out, "peak_allocated_bytes", v->peak_allocated_bytes);
    field(out, "alloc_calls", v->alloc_calls);
    field(out, "free_calls", v->free_calls);
    field(out, "cache_hits", v->cache_hits);
    field(out, "driver_alloc_calls", v->driver_alloc_calls);
    field(out, "driver_free_calls", v->driver_free_calls);
    field(out, "oom_recoveries", v->oom_recoveries);
    field(out, "oom_failures", v->oom_failures);
    field(out, "largest_free_block_bytes", v->largest_free_block);
#define CA_JSON_WAIT_(name, kind, help) maybe(out, #name, d->has_waits, d->w.name);
    CA_STATS_WAIT_FIELDS(CA_JSON_WAIT_)
#undef CA_JSON_WAIT_
}

void top_report_json(FILE *out, const top_list *l)
{
    fputs("{\"processes\":[", out);
    for (unsigned i = 0; i < l->n; i++) {
        const top_proc *p = &l->procs[i];
        fprintf(out, "%s{\"pid\":%d,\"uid\":%u,\"command\":", i ? "," : "", p->pid, p->uid);
        top_json_string(out, p->cmdline);
        fputs(",\"api\":", out);
        top_json_string(out, p->api);
        fprintf(out, ",\"alive\":%s,\"responding\":%s", p->alive ? "true" : "false",
                p->responding ? "true" : "false");
        field(out, "heartbeat_age_ms", p->heartbeat_age_ms);
        fputs(",\"devices\":[", out);
        for (unsigned k = 0; k < p->ndev; k++) {
            fprintf(out, "%s{\"device\":%u", k ? "," : "", p->dev[k].device);
            pool_fields(out, &p->dev[k]);
            maybe(out, "device_total_bytes", p->dev[k].has_mem, p->dev[k].mem_total);
            maybe(out, "device_free_bytes", p->dev[k].has_mem, p->dev[k].mem_free);
            field(out, "given_to_neighbours_bytes", p->dev[k].given);
            name(out, "uuid", p->dev[k].uuid);
            name(out, "pci_bus_id", p->dev[k].pci_bus_id);
            fputc('}', out);
        }
        fputs("],\"host\":", out);
        if (p->has_host) {
            fputs("{\"pool\":\"pinned\"", out);
            pool_fields(out, &p->host);
            fputc('}', out);
        } else {
            fputs("null", out);
        }
        fputc('}', out);
    }
    fputs("]}\n", out);
}
