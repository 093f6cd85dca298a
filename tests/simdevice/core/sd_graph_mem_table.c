/* sd_graph_mem_table.c: the records of graph memory (sd_graph_mem.c tells the model): which
 * graph allocations exist, what holds each, and what a launch's memory nodes do to them. Kept
 * apart from the calls that make and free graph memory (sd_graph_mem.c), which capture and queue
 * work, because the stream workers and the graph nodes below those use the records. */
#include <stdlib.h>

#include "sd_graph_mem.h"

static struct sd_gmem *tab;
static size_t ntab, captab;
static uint64_t last_id;

struct sd_gmem *sd_gmem_find(uint64_t id)
{
    for (size_t i = 0; i < ntab; i++)
        if (tab[i].id == id)
            return &tab[i];
    return NULL;
}

struct sd_alloc *sd_gmem_record(const struct sd_gmem *g)
{
    struct sd_alloc *a = sd_table_find_start(&sd_dev[g->dev].allocs, g->addr);
    return a && a->graph == g->id ? a : NULL;
}

int sd_gmem_new(struct sd_device *d, size_t n, void **p, uint64_t *id)
{
    if (ntab == captab) {
        size_t cap = captab ? captab * 2 : 16;
        struct sd_gmem *t = realloc(tab, cap * sizeof *t);
        if (!t)
            return SD_ENOMEM;
        tab = t;
        captab = cap;
    }
    int rc = sd_dev_alloc(d, n, true, p);
    if (rc)
        return rc;
    struct sd_alloc *a = sd_table_find_start(&d->allocs, (uintptr_t)*p);
    a->graph = ++last_id;
    a->mapped = false;
    tab[ntab++] = (struct sd_gmem){.id = a->graph, .dev = d->id, .addr = a->addr};
    *id = a->graph;
    return SD_OK;
}

void sd_gmem_drop_new(void)
{
    ntab--;
    sd_dev_release(&sd_dev[tab[ntab].dev], tab[ntab].addr);
}

void sd_gmem_launched(const struct sd_op *op)
{
    struct sd_gmem *g = sd_gmem_find(op->u.gmem.id);
    if (g) {
        g->refs++;
        g->live = op->u.gmem.map;
    }
}

void sd_gmem_execute(const struct sd_op *op)
{
    pthread_mutex_lock(&sd_lock);
    struct sd_gmem *g = sd_gmem_find(op->u.gmem.id);
    struct sd_alloc *a = g ? sd_gmem_record(g) : NULL;
    if (a)
        a->mapped = op->u.gmem.map;
    sd_gmem_unref(op->u.gmem.id);
    pthread_mutex_unlock(&sd_lock);
}

void sd_gmem_ref(uint64_t id)
{
    struct sd_gmem *g = sd_gmem_find(id);
    if (g)
        g->refs++;
}

void sd_gmem_unref(uint64_t id)
{
    struct sd_gmem *g = sd_gmem_find(id);
    if (!g || --g->refs > 0)
        return;
    if (sd_gmem_record(g))
        sd_dev_release(&sd_dev[g->dev], g->addr);
    *g = tab[--ntab];
}
