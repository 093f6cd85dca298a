/* sd_graph_mem.c: graph memory. cuMemAllocAsync on a capturing stream makes an allocation node:
 * the graph owns the allocation, whose address is reserved (and counted against the device's
 * capacity) from the capture until the last graph or executable graph with a node for it is
 * destroyed. The memory is accessible only from the moment a launch reaches the allocation node
 * until it reaches a free node (or a cuMemFreeAsync or cuMemFree outside the graph frees it),
 * so work that touches it outside that span faults, as on a GPU. */
#include <stdlib.h>
#include <string.h>

#include "sd_capture.h"

/* One graph allocation: where it is, who still holds it, and whether a launch allocated it
 * without a free since (what the next free outside a graph may take). */
struct gmem {
    uint64_t id;
    int dev;
    uintptr_t addr;
    int refs;
    bool live;
};

static struct gmem *tab;
static size_t ntab, captab;
static uint64_t last_id;

static struct gmem *find(uint64_t id)
{
    for (size_t i = 0; i < ntab; i++)
        if (tab[i].id == id)
            return &tab[i];
    return NULL;
}

/* The device record of g, or NULL once a reset or a context release dropped it. */
static struct sd_alloc *record_of(const struct gmem *g)
{
    struct sd_alloc *a = sd_table_find_start(&sd_dev[g->dev].allocs, g->addr);
    return a && a->graph == g->id ? a : NULL;
}

int sd_gmem_capture_alloc(struct sd_stream *s, size_t n, void **p)
{
    if (s->capture->c->invalid)
        return SD_ECAPINVALID;
    if (n == 0) {
        *p = NULL;
        return SD_OK;
    }
    if (ntab == captab) {
        size_t cap = captab ? captab * 2 : 16;
        struct gmem *t = realloc(tab, cap * sizeof *t);
        if (!t)
            return SD_ENOMEM;
        tab = t;
        captab = cap;
    }
    struct sd_device *d = s->dev;
    int rc = sd_dev_alloc(d, n, true, p);
    if (rc)
        return rc;
    struct sd_alloc *a = sd_table_find_start(&d->allocs, (uintptr_t)*p);
    a->graph = ++last_id;
    a->mapped = false;
    tab[ntab++] = (struct gmem){.id = a->graph, .dev = d->id, .addr = a->addr};
    struct sd_op *op = sd_op_new(OP_GMEM);
    if (op) {
        op->u.gmem.id = a->graph;
        op->u.gmem.map = true;
    }
    if (!op || !sd_capture_add(s->capture, op)) { /* a failed add freed op */
        ntab--;
        sd_dev_release(d, (uintptr_t)*p);
        sd_capture_invalidate(s->capture->c);
        return SD_ENOMEM;
    }
    sd_log("graph allocation %llu of %zu bytes at %p", (unsigned long long)tab[ntab - 1].id, n,
           *p);
    return SD_OK;
}

int sd_gmem_capture_free(struct sd_stream *s, struct sd_device *owner, struct sd_alloc *a)
{
    (void)owner;
    if (s->capture->c->invalid)
        return SD_ECAPINVALID;
    struct sd_op *op = sd_op_new(OP_GMEM);
    if (op)
        op->u.gmem.id = a->graph; /* map stays false: a free node */
    if (!op || !sd_capture_add(s->capture, op)) {
        sd_capture_invalidate(s->capture->c);
        return SD_ENOMEM;
    }
    return SD_OK;
}

int sd_gmem_free(struct sd_stream *s, struct sd_device *owner, struct sd_alloc *a)
{
    uint64_t id = a->graph;
    struct gmem *g = find(id);
    if (!g || !g->live)
        return SD_EBADFREE;
    if (s) {
        struct sd_op *op = sd_op_new(OP_GMEM);
        if (!op)
            return SD_ENOMEM;
        op->u.gmem.id = id;
        g->live = false;
        g->refs++;
        sd_enqueue(s, op, NULL);
        return SD_OK;
    }
    /* cuMemFree waits for the device first, as for any allocation. */
    g->live = false;
    g->refs++;
    owner->c.device_syncs++;
    sd_wait_device(owner);
    if ((a = record_of(g)) != NULL)
        a->mapped = false;
    sd_gmem_unref(id);
    return SD_OK;
}

void sd_gmem_launched(const struct sd_op *op)
{
    struct gmem *g = find(op->u.gmem.id);
    if (g) {
        g->refs++;
        g->live = op->u.gmem.map;
    }
}

void sd_gmem_execute(const struct sd_op *op)
{
    pthread_mutex_lock(&sd_lock);
    struct gmem *g = find(op->u.gmem.id);
    struct sd_alloc *a = g ? record_of(g) : NULL;
    if (a)
        a->mapped = op->u.gmem.map;
    sd_gmem_unref(op->u.gmem.id);
    pthread_mutex_unlock(&sd_lock);
}

void sd_gmem_ref(uint64_t id)
{
    struct gmem *g = find(id);
    if (g)
        g->refs++;
}

void sd_gmem_unref(uint64_t id)
{
    struct gmem *g = find(id);
    if (!g || --g->refs > 0)
        return;
    if (record_of(g))
        sd_dev_release(&sd_dev[g->dev], g->addr);
    *g = tab[--ntab];
}
