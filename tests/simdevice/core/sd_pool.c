/* sd_pool.c: stream-ordered memory pools (cuMemPool*, hipMemPool*). Each device has a default
 * pool and a current one; programs may create more. A pool counts the bytes handed out (used)
 * and the bytes freed to it but not given back (kept): kept bytes stay reserved on the device
 * (they count in its used capacity) until a trim, or a synchronization finds the pool holding
 * more than its release threshold, as CUDA documents the real pool. Allocating from a pool is
 * in sd_pool_alloc.c. */
#include <stdlib.h>

#include "sd_pool.h"

#define POOL_MAGIC 0x506f6f6cu

static struct sd_pool defaults[SD_MAX_DEVICES];
static struct sd_pool *current[SD_MAX_DEVICES];
static struct sd_pool *created;

/* Attribute numbers: CUmemPool_attribute and hipMemPoolAttr agree. */
enum {
    ATTR_REUSE_FIRST = 1, ATTR_REUSE_LAST = 3, ATTR_THRESHOLD = 4, ATTR_RESERVED = 5,
    ATTR_RESERVED_HIGH = 6, ATTR_USED = 7, ATTR_USED_HIGH = 8,
};
enum { ACCESS_NONE = 0, ACCESS_READ = 1, ACCESS_RW = 3 };

static void pool_init(struct sd_pool *p, struct sd_device *d)
{
    p->magic = POOL_MAGIC;
    p->dev = d;
    for (int i = 0; i < 3; i++)
        p->reuse[i] = 1; /* every reuse policy is enabled by default */
}

/* The default pool of d, made at first use. Under sd_lock. */
static struct sd_pool *default_of(struct sd_device *d)
{
    struct sd_pool *p = &defaults[d->id];
    if (!p->magic)
        pool_init(p, d);
    return p;
}

struct sd_pool *sd_pool_current_of(struct sd_device *d)
{
    return current[d->id] ? current[d->id] : default_of(d);
}

struct sd_pool *sd_pool_lookup(const void *handle)
{
    const struct sd_pool *h = handle;
    if (h >= defaults && h < defaults + sd_cfg.devices)
        return h->magic ? (struct sd_pool *)h : NULL;
    for (struct sd_pool *p = created; p; p = p->next)
        if (p == h)
            return p;
    return NULL;
}

void sd_pool_give_back(struct sd_pool *p, size_t n)
{
    p->kept -= n;
    p->dev->used -= n;
    p->dev->c.reserved_bytes = p->dev->used;
}

/* Gives back what p keeps beyond a reserve of `reserve` bytes (used bytes cannot go). */
static void trim_to(struct sd_pool *p, uint64_t reserve)
{
    size_t keep = reserve > p->used ? (size_t)(reserve - p->used) : 0;
    if (p->kept > keep) {
        size_t n = p->kept - keep;
        p->kept -= n;
        sd_dev_shrink(p->dev, n);
    }
}

void sd_pool_returned(struct sd_pool *p, size_t rsize)
{
    p->used -= rsize;
    if (!p->destroyed) {
        p->kept += rsize;
        return;
    }
    sd_dev_shrink(p->dev, rsize);
    if (!p->used)
        free(p);
}

void sd_pool_sync_trim(void)
{
    for (int i = 0; i < sd_cfg.devices; i++)
        if (defaults[i].magic)
            trim_to(&defaults[i], defaults[i].threshold);
    for (struct sd_pool *p = created; p; p = p->next)
        trim_to(p, p->threshold);
}

void sd_pool_drop_device(struct sd_device *d)
{
    trim_to(default_of(d), 0);
    for (struct sd_pool *p = created; p; p = p->next)
        if (p->dev == d)
            trim_to(p, 0);
}

int sd_pool_create(void **out, int dev, size_t max_size)
{
    sd_init();
    if (!out || dev < 0 || dev >= sd_cfg.devices)
        return SD_EINVAL;
    struct sd_pool *p = calloc(1, sizeof *p);
    if (!p)
        return SD_ENOMEM;
    pthread_mutex_lock(&sd_lock);
    pool_init(p, &sd_dev[dev]);
    p->max_size = max_size;
    p->next = created;
    created = p;
    pthread_mutex_unlock(&sd_lock);
    *out = p;
    return SD_OK;
}

int sd_pool_destroy(void *pool)
{
    sd_init();
    pthread_mutex_lock(&sd_lock);
    struct sd_pool *p = sd_pool_lookup(pool);
    int rc = SD_EINVAL;
    if (p && p != &defaults[p->dev->id]) {
        for (struct sd_pool **pp = &created; *pp; pp = &(*pp)->next)
            if (*pp == p) {
                *pp = p->next;
                break;
            }
        if (current[p->dev->id] == p)
            current[p->dev->id] = NULL; /* the default pool is current again */
        trim_to(p, 0);
        /* Allocations still out keep it alive until they come back. */
        p->destroyed = true;
        if (!p->used)
            free(p);
        rc = SD_OK;
    }
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

/* Stores device dev's default or current pool. */
static int put_pool(int dev, void **out, bool cur)
{
    int rc = sd_check_device_arg(out, dev);
    if (rc)
        return rc;
    pthread_mutex_lock(&sd_lock);
    *out = cur ? sd_pool_current_of(&sd_dev[dev]) : default_of(&sd_dev[dev]);
    pthread_mutex_unlock(&sd_lock);
    return SD_OK;
}

int sd_pool_default(int dev, void **out)
{
    return put_pool(dev, out, false);
}

int sd_pool_current(int dev, void **out)
{
    return put_pool(dev, out, true);
}

int sd_pool_set_current(int dev, void *pool)
{
    sd_init();
    if (dev < 0 || dev >= sd_cfg.devices)
        return SD_EDEVICE;
    pthread_mutex_lock(&sd_lock);
    struct sd_pool *p = sd_pool_lookup(pool);
    /* The pool must be local to the device. */
    int rc = p && p->dev->id == dev ? SD_OK : SD_EINVAL;
    if (!rc)
        current[dev] = p == &defaults[dev] ? NULL : p;
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

int sd_pool_trim(void *pool, size_t keep)
{
    sd_init();
    pthread_mutex_lock(&sd_lock);
    struct sd_pool *p = sd_pool_lookup(pool);
    if (p)
        trim_to(p, keep);
    pthread_mutex_unlock(&sd_lock);
    return p ? SD_OK : SD_EINVAL;
}

/* Stores attribute `attr` of p. Under sd_lock. */
static int get_attr(const struct sd_pool *p, int attr, void *value)
{
    uint64_t v;
    switch (attr) {
    case ATTR_REUSE_FIRST:
    case ATTR_REUSE_FIRST + 1:
    case ATTR_REUSE_LAST:
        *(int *)value = p->reuse[attr - ATTR_REUSE_FIRST];
        return SD_OK;
    case ATTR_THRESHOLD: v = p->threshold; break;
    case ATTR_RESERVED: v = p->used + p->kept; break;
    case ATTR_RESERVED_HIGH: v = p->reserved_high; break;
    case ATTR_USED: v = p->used; break;
    case ATTR_USED_HIGH: v = p->used_high; break;
    default: return SD_EINVAL;
    }
    *(uint64_t *)value = v;
    return SD_OK;
}

/* Sets attribute `attr` of p; the high watermarks may only be reset (to 0). Under sd_lock. */
static int set_attr(struct sd_pool *p, int attr, const void *value)
{
    switch (attr) {
    case ATTR_REUSE_FIRST:
    case ATTR_REUSE_FIRST + 1:
    case ATTR_REUSE_LAST:
        p->reuse[attr - ATTR_REUSE_FIRST] = *(const int *)value != 0;
        return SD_OK;
    case ATTR_THRESHOLD:
        p->threshold = *(const uint64_t *)value;
        return SD_OK;
    case ATTR_RESERVED_HIGH:
    case ATTR_USED_HIGH:
        if (*(const uint64_t *)value != 0)
            return SD_EINVAL;
        if (attr == ATTR_USED_HIGH)
            p->used_high = p->used;
        else
            p->reserved_high = p->used + p->kept;
        return SD_OK;
    default: /* the current amounts are read-only */
        return SD_EINVAL;
    }
}

int sd_pool_attr(void *pool, int attr, void *value, int set)
{
    sd_init();
    if (!value)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    struct sd_pool *p = sd_pool_lookup(pool);
    int rc = !p ? SD_EINVAL : set ? set_attr(p, attr, value) : get_attr(p, attr, value);
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

int sd_pool_set_access(void *pool, const struct sd_vmm_access *d, size_t n)
{
    sd_init();
    if (!d && n)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    struct sd_pool *p = sd_pool_lookup(pool);
    int rc = p ? SD_OK : SD_EINVAL;
    /* All descriptors are checked before any applies: a bad one changes nothing. */
    for (size_t i = 0; !rc && i < n; i++) {
        int f = d[i].flags;
        if (d[i].loc_type != 1 || d[i].loc_id < 0 || d[i].loc_id >= sd_cfg.devices ||
            (f != ACCESS_NONE && f != ACCESS_READ && f != ACCESS_RW) ||
            (d[i].loc_id == p->dev->id && f != ACCESS_RW)) /* the owner keeps its access */
            rc = SD_EINVAL;
    }
    for (size_t i = 0; !rc && i < n; i++)
        p->access[d[i].loc_id] = (unsigned char)d[i].flags;
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

int sd_pool_get_access(int *flags, void *pool, int loc_type, int loc_id)
{
    sd_init();
    if (!flags || loc_type != 1 || loc_id < 0 || loc_id >= sd_cfg.devices)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    struct sd_pool *p = sd_pool_lookup(pool);
    if (p)
        *flags = loc_id == p->dev->id ? ACCESS_RW : p->access[loc_id];
    pthread_mutex_unlock(&sd_lock);
    return p ? SD_OK : SD_EINVAL;
}
