/* sd_graph_mem.c: graph memory. cuMemAllocAsync on a capturing stream makes an allocation node:
 * the graph owns the allocation, whose address is reserved (and counted against the device's
 * capacity) from the capture until the last graph or executable graph with a node for it is
 * destroyed. The memory is accessible only from the moment a launch reaches the allocation node
 * until it reaches a free node (or a cuMemFreeAsync or cuMemFree outside the graph frees it),
 * so work that touches it outside that span faults, as on a GPU. The records of graph memory
 * are in sd_graph_mem_table.c. */
#include "sd_graph_mem.h"

int sd_gmem_capture_alloc(struct sd_stream *s, size_t n, void **p)
{
    if (s->capture->c->invalid)
        return SD_ECAPINVALID;
    if (n == 0) {
        *p = NULL;
        return SD_OK;
    }
    uint64_t id;
    int rc = sd_gmem_new(s->dev, n, p, &id);
    if (rc)
        return rc;
    struct sd_op *op = sd_op_new(OP_GMEM);
    if (op) {
        op->u.gmem.id = id;
        op->u.gmem.map = true;
    }
    if (!op || !sd_capture_add(s->capture, op)) { /* a failed add freed op */
        sd_gmem_drop_new();
        sd_capture_invalidate(s->capture->c);
        return SD_ENOMEM;
    }
    sd_log("graph allocation %llu of %zu bytes at %p", (unsigned long long)id, n, *p);
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
    struct sd_gmem *g = sd_gmem_find(id);
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
    /* The wait let go of sd_lock: other threads may have grown or compacted the table, so the
     * record is looked up again (the reference taken above keeps it in the table). */
    if ((g = sd_gmem_find(id)) != NULL && (a = sd_gmem_record(g)) != NULL)
        a->mapped = false;
    sd_gmem_unref(id);
    return SD_OK;
}
