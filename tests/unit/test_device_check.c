/* ca_arena_check sees a broken invariant: each mode breaks one on purpose behind the arena's
 * back, and the check must stop the process (meson expects these to fail); mode "intact"
 * breaks nothing and must pass. Exits 0 where the checks are compiled out, so the broken
 * modes then fail to fail. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "arena/internal.h"
#include "fake_backend.h"

#define MiB ((size_t)1 << 20)

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "intact";
    fake_device dev;
    ca_backend be;
    /* The mappings modes run with expandable segments, whose ranges the check walks too. */
    bool ranges = strncmp(mode, "mappings", 8) == 0 || strcmp(mode, "intact-expandable") == 0;
    ca_config cfg = {.pool = CA_POOL_SPLIT, .reuse = CA_REUSE_SAFE,
                     .release_threshold = UINT64_MAX, .max_split = UINT64_MAX, .quiet = 1,
                     .expandable = ranges};
    fake_init(&dev, &be, 1024 * MiB);
    ca_arena *a = ca_arena_create(&be, &cfg);
    void *p = NULL, *q = NULL;
    if (!a || ca_malloc(a, 0, MiB, CA_STREAM_LEGACY, CA_API_PLAIN, &p) != CA_OK ||
        ca_malloc(a, 0, 2 * MiB, CA_STREAM_LEGACY, CA_API_PLAIN, &q) != CA_OK)
        return 2;
    ca_free(a, q, CA_STREAM_LEGACY, CA_API_PLAIN, NULL);
    ca_device *d = a->dev[0];
    if (strcmp(mode, "accounting") == 0)
        d->st.cached_bytes += 512, d->st.reserved_bytes += 512; /* balanced, but not its blocks */
    else if (strcmp(mode, "tiling") == 0)
        d->segs[0]->first->size += 512;
    else if (strcmp(mode, "map") == 0)
        d->live.count++;
    else if (strcmp(mode, "bins") == 0)
        d->plain.large.bytes += 512, d->plain.small.bytes += 512;
    else if (strcmp(mode, "mappings") == 0) /* a mapping said to begin in unmapped memory */
        for (int i = 0; i < d->nsegs; i++)
            if (d->segs[i]->expandable && d->segs[i]->unmapped)
                ca_range_mark(d->segs[i], d->vmm.page, d->segs[i]->unmapped->addr, true);
    ca_arena_check(a);
    puts("no broken invariant seen");
    ca_free(a, p, CA_STREAM_LEGACY, CA_API_PLAIN, NULL);
    ca_arena_destroy(a);
    return 0;
}
