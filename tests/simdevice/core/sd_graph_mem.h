/* sd_graph_mem.h: what the two graph memory files share. sd_graph_mem_table.c keeps the records,
 * below the stream workers and the graph nodes that use them; sd_graph_mem.c makes and frees
 * graph memory, which captures and queues work, above them. Everything here is used under
 * sd_lock. */
#ifndef SD_GRAPH_MEM_H
#define SD_GRAPH_MEM_H

#include "sd_capture.h"

/* One graph allocation: where it is, who still holds it, and whether a launch allocated it
 * without a free since (what the next free outside a graph may take). */
struct sd_gmem {
    uint64_t id;
    int dev;
    uintptr_t addr;
    int refs;
    bool live;
};

/* The record of graph memory id, or NULL once the last holder dropped it. */
struct sd_gmem *sd_gmem_find(uint64_t id);
/* The device record of g, or NULL once a reset or a context release dropped it. */
struct sd_alloc *sd_gmem_record(const struct sd_gmem *g);
/* Reserves n bytes of d as new graph memory, inaccessible and held by nobody yet: *p gets its
 * address, *id its number. SD_ENOMEM beyond the device's capacity or out of memory. */
int sd_gmem_new(struct sd_device *d, size_t n, void **p, uint64_t *id);
/* Undoes the latest sd_gmem_new: forgets the record and releases the memory. */
void sd_gmem_drop_new(void);

#endif
