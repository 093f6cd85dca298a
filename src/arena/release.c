/* Wholly free segments given back to the driver: detached under the device lock, released
 * once it is dropped. */
#include <stdlib.h>

#include "arena/internal.h"

/* Detach every empty, reuse-safe segment (preallocated ones too when all), up to want bytes.
 * Returns the list to give back once the lock is dropped. */
ca_segment **ca_collect_empty(ca_arena *a, ca_device *d, bool all, uint64_t want, int *n)
{
    int cap = 0, k = 0;
    *n = 0;
    if (ca_quiet(a)) /* giving segments back is a driver free */
        return NULL;
    ca_device_consolidate(d);
    for (ca_segment *s = d->empty_segs; s; s = s->enext)
        cap++;
    *n = 0;
    if (!cap)
        return NULL;
    ca_segment **out = malloc((size_t)cap * sizeof *out);
    if (!out)
        return NULL;
    uint64_t got = 0;
    for (ca_segment *s = d->empty_segs, *next; s && got < want; s = next) {
        next = s->enext;
        if ((s->prealloc && !all) || !ca_reuse_segment_safe(a, d, s))
            continue;
        got += s->size;
        ca_segment_detach(a, d, s);
        out[k++] = s;
    }
    *n = k;
    return out;
}

uint64_t ca_release_list(ca_arena *a, ca_device *d, ca_segment **list, int n)
{
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++) {
        bytes += list[i]->size;
        ca_segment_release(a, d->id, list[i]);
    }
    free(list);
    return bytes;
}
