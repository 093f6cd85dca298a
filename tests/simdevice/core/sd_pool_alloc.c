/* sd_pool_alloc.c: stream-ordered allocation from a pool: the pool's kept bytes first, then new
 * device memory. Apart from sd_pool.c because the pools sit below the address space (its
 * releases give memory back to them), while allocating from one calls into it. */
#include "sd_pool.h"

int sd_pool_alloc(struct sd_pool *p, struct sd_device *d, size_t n, void **out)
{
    if (!p)
        p = sd_pool_current_of(d);
    d = p->dev;
    size_t rsize = (n + SD_ALIGN - 1) / SD_ALIGN * SD_ALIGN;
    if (p->max_size && p->used + rsize > p->max_size) {
        d->c.oom++;
        return SD_ENOMEM;
    }
    if (sd_inject_alloc(d))
        return SD_ENOMEM;
    /* Kept bytes serve the request first: they are already the pool's. */
    size_t take = p->kept < rsize ? p->kept : rsize;
    sd_pool_give_back(p, take);
    int rc = sd_dev_alloc(d, n, true, out);
    if (rc) {
        p->kept += take;
        sd_dev_grow(d, take);
        return rc;
    }
    struct sd_alloc *a = sd_table_find_start(&d->allocs, (uintptr_t)*out);
    a->pool = p;
    p->used += rsize;
    if (p->used > p->used_high)
        p->used_high = p->used;
    if (p->used + p->kept > p->reserved_high)
        p->reserved_high = p->used + p->kept;
    return SD_OK;
}

int sd_malloc_from_pool(void **out, size_t n, void *pool, void *stream, int ptsz)
{
    int rc = sd_check_current();
    if (rc)
        return rc;
    if (!out || !n)
        return SD_EINVAL;
    sd_spin_us(sd_cfg.async_us);
    pthread_mutex_lock(&sd_lock);
    struct sd_pool *p = sd_pool_lookup(pool);
    struct sd_stream *s;
    rc = p ? sd_resolve_stream(stream, ptsz, &s) : SD_EINVAL;
    if (!rc)
        rc = sd_pool_alloc(p, p->dev, n, out);
    if (!rc)
        p->dev->c.malloc_async_calls++;
    pthread_mutex_unlock(&sd_lock);
    return rc;
}
