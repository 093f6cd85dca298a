/* sd_memory.c: cudaMalloc/cudaFree and friends, with their modelled cost: an allocation costs a
 * base plus a size-proportional part, a free first waits for the whole device. */
#include <stdlib.h>
#include <string.h>

#include "sd_capture.h"

/* Pinned and managed host allocations, so pointer queries and memsets know them. */
static struct sd_table host_allocs;

static void count_bad_free(struct sd_device *d)
{
    d->c.invalid_frees++;
}

/* A potentially unsafe call during a capture (sd_capture_unsafe), taking the lock for it. */
static int unsafe_call(void)
{
    pthread_mutex_lock(&sd_lock);
    int rc = sd_capture_unsafe();
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

/* The checks sd_malloc and sd_host_alloc start with: a faulted device and a null out-pointer
 * fail, a zero-byte request succeeds with NULL. True when the call is over, with *rc its result. */
static bool alloc_done(void **p, size_t n, int *rc)
{
    *rc = sd_check_current();
    if (!*rc && !p)
        *rc = SD_EINVAL;
    if (*rc)
        return true;
    if (n == 0) {
        *p = NULL;
        return true;
    }
    return false;
}

/* The checks sd_free and sd_host_free start with: a faulted device fails, NULL is a no-op.
 * True when the call is over, with *rc its result. */
static bool free_done(const void *p, int *rc)
{
    *rc = sd_check_current();
    return *rc || !p;
}

int sd_malloc(void **p, size_t n)
{
    int rc;
    if (alloc_done(p, n, &rc) || (rc = unsafe_call()) != SD_OK)
        return rc;
    /* A request larger than the whole device is refused at once, as a real driver does: its
     * size-proportional cost would otherwise be spent first (2^62 bytes: forever). */
    if (n > sd_cfg.memory) {
        pthread_mutex_lock(&sd_lock);
        struct sd_device *d = sd_cur();
        d->c.oom++;
        pthread_mutex_unlock(&sd_lock);
        sd_log("malloc(%zu) on device %d -> %d: larger than the device", n, d->id, SD_ENOMEM);
        return SD_ENOMEM;
    }
    sd_spin_serial_us(sd_cfg.malloc_us + sd_cfg.malloc_us_per_gib * ((double)n / (double)(1u << 30)));
    pthread_mutex_lock(&sd_lock);
    struct sd_device *d = sd_cur();
    rc = sd_inject_alloc(d) ? SD_ENOMEM : sd_dev_alloc(d, n, false, p);
    if (!rc) {
        d->c.malloc_calls++;
        d->c.malloc_bytes += n;
    }
    pthread_mutex_unlock(&sd_lock);
    sd_log("malloc(%zu) on device %d -> %d %p", n, d->id, rc, rc ? NULL : *p);
    return rc;
}

int sd_free(void *p)
{
    int rc;
    if (free_done(p, &rc) || (rc = unsafe_call()) != SD_OK)
        return rc;
    double t0 = sd_now(); /* the implicit synchronization's floor counts from here */
    pthread_mutex_lock(&sd_lock);
    struct sd_device *owner = sd_dev_of(p);
    struct sd_alloc *a = owner ? sd_table_find_start(&owner->allocs, (uintptr_t)p) : NULL;
    if (a && a->graph) {
        if ((rc = sd_gmem_free(NULL, owner, a)) == SD_EBADFREE)
            count_bad_free(owner);
        pthread_mutex_unlock(&sd_lock);
        if (rc == SD_OK)
            sd_price_floor(t0, sd_cfg.ctx_sync_us);
        return rc;
    }
    /* Imported memory is not the process's to free: it goes with cuIpcCloseMemHandle. */
    if (!a || a->free_pending || a->ipc == SD_IPC_IMPORTED) {
        count_bad_free(owner ? owner : sd_cur());
        pthread_mutex_unlock(&sd_lock);
        sd_log("free(%p): not a live allocation", p);
        return SD_EBADFREE;
    }
    /* Read before the wait, which lets go of sd_lock: the table may move meanwhile. */
    double gib = (double)a->size / (double)(1u << 30);
    owner->c.device_syncs++;
    sd_wait_device(owner);
    pthread_mutex_unlock(&sd_lock);
    sd_price_floor(t0, sd_cfg.ctx_sync_us);
    sd_inject_sync_delay();
    sd_spin_us(sd_cfg.free_us + sd_cfg.free_us_per_gib * gib);
    pthread_mutex_lock(&sd_lock);
    a = sd_table_find_start(&owner->allocs, (uintptr_t)p);
    if (!a || a->free_pending) { /* another thread freed it meanwhile */
        count_bad_free(owner);
        rc = SD_EBADFREE;
    } else {
        owner->c.free_calls++;
        owner->c.free_bytes += a->size;
        sd_dev_release(owner, (uintptr_t)p);
    }
    pthread_mutex_unlock(&sd_lock);
    sd_log("free(%p) on device %d -> %d", p, owner->id, rc);
    return rc;
}

int sd_malloc_async(void **p, size_t n, void *stream, int ptsz)
{
    int rc = sd_check_current();
    if (rc)
        return rc;
    if (!p)
        return SD_EINVAL;
    sd_spin_us(sd_cfg.async_us);
    pthread_mutex_lock(&sd_lock);
    struct sd_stream *s;
    rc = sd_resolve_stream(stream, ptsz, &s);
    if (!rc && s->capture) { /* an allocation node: the graph's memory, not the pool's */
        rc = sd_gmem_capture_alloc(s, n, p);
        pthread_mutex_unlock(&sd_lock);
        return rc;
    }
    if (!rc)
        rc = sd_capture_legacy(s);
    if (!rc && n == 0)
        *p = NULL;
    else if (!rc)
        rc = sd_pool_alloc(NULL, s->dev, n, p); /* the stream's device's current pool */
    if (!rc)
        s->dev->c.malloc_async_calls++;
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

int sd_free_async(void *p, void *stream, int ptsz)
{
    int rc = sd_check_current();
    if (rc)
        return rc;
    sd_spin_us(sd_cfg.async_us);
    pthread_mutex_lock(&sd_lock);
    struct sd_stream *s;
    rc = sd_resolve_stream(stream, ptsz, &s);
    if (rc || !p) {
        pthread_mutex_unlock(&sd_lock);
        return rc;
    }
    struct sd_device *owner = sd_dev_of(p);
    struct sd_alloc *a = owner ? sd_table_find_start(&owner->allocs, (uintptr_t)p) : NULL;
    struct sd_op *op = NULL;
    /* In a capture only graph memory can be freed (a free node); outside one graph memory is
     * freed in stream order, the reservation staying the graph's. */
    if (s->capture || (a && a->graph)) {
        if (s->capture)
            rc = a && a->graph ? sd_gmem_capture_free(s, owner, a) : SD_EINVAL;
        else if ((rc = sd_capture_legacy(s)) == SD_OK)
            rc = sd_gmem_free(s, owner, a);
        if (rc == SD_EBADFREE)
            count_bad_free(owner);
        pthread_mutex_unlock(&sd_lock);
        return rc;
    }
    if ((rc = sd_capture_legacy(s)) != SD_OK) {
        pthread_mutex_unlock(&sd_lock);
        return rc;
    }
    if (!a || a->free_pending || a->ipc == SD_IPC_IMPORTED) {
        count_bad_free(owner ? owner : s->dev);
        rc = SD_EBADFREE;
    } else if (!(op = sd_op_new(OP_FREE))) {
        rc = SD_ENOMEM;
    } else {
        a->free_pending = true;
        op->u.free.addr = (uintptr_t)p;
        op->u.free.dev = owner->id;
        sd_enqueue(s, op, NULL);
        s->dev->c.free_async_calls++;
    }
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

int sd_mem_info(size_t *free_bytes, size_t *total)
{
    int rc = sd_check_current();
    if (rc)
        return rc;
    if (!free_bytes || !total)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    *total = sd_cfg.memory;
    *free_bytes = sd_dev_free(sd_cur());
    pthread_mutex_unlock(&sd_lock);
    return SD_OK;
}

#define MIB ((double)(1u << 20))

/* Pinned host bytes the process holds, all devices together (under sd_lock). */
static size_t pinned_held;

/* Pinned or managed host memory; `flags` are kept with a pinned block. Pinning costs time in
 * proportion to its size (docs/gpu.md finding 12); managed memory's cost is not modelled.
 * Pinning past SIMDEV_PINNED_LIMIT is out of memory, as under a container's memory limit. */
static int host_alloc(void **p, size_t n, bool managed, unsigned flags)
{
    int rc;
    if (alloc_done(p, n, &rc) || (rc = unsafe_call()) != SD_OK)
        return rc;
    void *m = NULL;
    if (posix_memalign(&m, 4096, n) != 0)
        return SD_ENOMEM;
    if (!managed)
        sd_spin_us(sd_cfg.host_alloc_us + sd_cfg.host_alloc_us_per_mib * ((double)n / MIB));
    pthread_mutex_lock(&sd_lock);
    struct sd_device *d = sd_cur();
    size_t rsize = (n + SD_ALIGN - 1) / SD_ALIGN * SD_ALIGN;
    if (managed && !sd_dev_fits(d, rsize)) {
        d->c.oom++;
        rc = SD_ENOMEM;
    } else if (!managed && sd_cfg.pinned_limit && n > sd_cfg.pinned_limit - pinned_held) {
        rc = SD_ENOMEM;
    } else {
        /* span carries the device id, async says managed: fields reused for host records */
        struct sd_alloc a = {.addr = (uintptr_t)m, .size = n, .rsize = managed ? rsize : 0,
                             .span = (size_t)d->id, .async = managed,
                             .host_flags = managed ? 0 : flags};
        if (sd_table_insert(&host_allocs, &a) != 0) {
            rc = SD_ENOMEM;
        } else if (managed) {
            sd_dev_grow(d, rsize);
        } else {
            d->c.host_allocs++;
            d->c.host_bytes += n;
            pinned_held += n;
        }
    }
    pthread_mutex_unlock(&sd_lock);
    if (rc)
        free(m);
    else
        *p = m;
    sd_log("host alloc(%zu, flags 0x%x)%s -> %d %p", n, flags, managed ? " managed" : "", rc,
           rc ? NULL : m);
    return rc;
}

int sd_host_alloc(void **p, size_t n, unsigned flags)
{
    return host_alloc(p, n, false, flags);
}

int sd_managed_alloc(void **p, size_t n, unsigned flags)
{
    if (flags != 1 && flags != 2) /* cudaMemAttachGlobal, cudaMemAttachHost (HIP's alike) */
        return SD_EINVAL;
    return host_alloc(p, n, true, 0);
}

int sd_host_free(void *p)
{
    int rc;
    if (free_done(p, &rc) || (rc = unsafe_call()) != SD_OK)
        return rc;
    pthread_mutex_lock(&sd_lock);
    struct sd_alloc *a = sd_table_find_start(&host_allocs, (uintptr_t)p);
    if (!a) {
        count_bad_free(sd_cur());
        pthread_mutex_unlock(&sd_lock);
        sd_log("host free(%p): not the start of pinned or managed memory", p);
        return SD_EBADFREE;
    }
    struct sd_device *d = &sd_dev[a->span];
    bool managed = a->async;
    size_t n = a->size;
    /* Freeing pinned or managed memory waits for the device, as the real call does (an H100's
     * cuMemFreeHost returned after a host function queued before it). */
    double t0 = sd_now();
    d->c.device_syncs++;
    sd_wait_device(d);
    pthread_mutex_unlock(&sd_lock);
    sd_price_floor(t0, sd_cfg.ctx_sync_us);
    /* Unpinning costs time in proportion to the size too, after the wait. */
    if (!managed)
        sd_spin_us(sd_cfg.host_free_us + sd_cfg.host_free_us_per_mib * ((double)n / MIB));
    pthread_mutex_lock(&sd_lock);
    a = sd_table_find_start(&host_allocs, (uintptr_t)p);
    if (!a) { /* another thread freed it meanwhile */
        count_bad_free(d);
        rc = SD_EBADFREE;
    } else {
        if (a->async) {
            sd_dev_shrink(d, a->rsize);
        } else {
            d->c.host_frees++;
            d->c.host_bytes -= a->size;
            pinned_held -= a->size;
        }
        sd_table_remove(&host_allocs, (uintptr_t)p);
    }
    pthread_mutex_unlock(&sd_lock);
    if (!rc)
        free(p);
    sd_log("host free(%p) -> %d", p, rc);
    return rc;
}

bool sd_host_block(uintptr_t p, uintptr_t *base, size_t *size, unsigned *flags)
{
    struct sd_alloc *a = sd_table_find_containing(&host_allocs, p);
    if (!a || a->async)
        return false;
    if (base)
        *base = a->addr;
    if (size)
        *size = a->size;
    if (flags)
        *flags = a->host_flags;
    return true;
}

int sd_host_query(const void *p, void **base, size_t *size, unsigned *flags)
{
    sd_init();
    uintptr_t b = 0;
    pthread_mutex_lock(&sd_lock);
    bool found = sd_host_block((uintptr_t)p, &b, size, flags);
    pthread_mutex_unlock(&sd_lock);
    if (found && base)
        *base = (void *)b;
    return found ? SD_OK : SD_EINVAL;
}

/* Managed allocation holding [p, p+n), or NULL. Under sd_lock. */
static struct sd_alloc *managed_of(const void *p)
{
    struct sd_alloc *a = sd_table_find_containing(&host_allocs, (uintptr_t)p);
    return a && a->async ? a : NULL;
}

int sd_pointer_info(const void *p, int *type, int *device, void **dptr, void **hptr)
{
    sd_init();
    pthread_mutex_lock(&sd_lock);
    struct sd_device *owner = sd_dev_of(p);
    struct sd_alloc *h = owner ? NULL : sd_table_find_containing(&host_allocs, (uintptr_t)p);
    if (owner && (sd_table_find_containing(&owner->allocs, (uintptr_t)p) ||
                  sd_vmm_mapped((uintptr_t)p))) {
        *type = SD_PTR_DEVICE;
        *device = owner->id;
        *dptr = (void *)p;
        *hptr = NULL;
    } else if (h) {
        *type = h->async ? SD_PTR_MANAGED : SD_PTR_HOST;
        *device = (int)h->span;
        *dptr = (void *)p;
        *hptr = (void *)p;
    } else {
        *type = SD_PTR_UNREGISTERED;
        *device = -2;
        *dptr = NULL;
        *hptr = owner ? NULL : (void *)p;
    }
    pthread_mutex_unlock(&sd_lock);
    return SD_OK;
}

/* Where a pointer lives: a device id, or -1 for host memory. Under sd_lock. */
static int where(const void *p)
{
    struct sd_device *d = sd_dev_of(p);
    return d ? d->id : -1;
}

/* A synchronous copy waits for its stream: refused where a capture forbids the calling thread
 * to wait, or where the stream's work (or the legacy stream's, beside a blocking capture) is
 * captured and never runs. Under sd_lock. */
static int sync_refused(void *stream, int ptsz)
{
    int rc = sd_capture_unsafe();
    struct sd_stream *s;
    if (!rc && sd_resolve_stream(stream, ptsz, &s) == SD_OK)
        rc = sd_capture_stream_wait(s);
    return rc;
}

int sd_memcpy(void *dst, const void *src, size_t n, int kind, void *stream, int ptsz, int wait)
{
    double t0 = sd_now();
    int rc = sd_check_current();
    if (rc)
        return rc;
    if (kind < 0 || kind > 4)
        return SD_EDIR;
    if (n && (!dst || !src))
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    int dd = where(dst), sdv = where(src);
    static const int want_dst[4] = {-1, 1, -1, 1}, want_src[4] = {-1, -1, 1, 1};
    if (kind != 4 && n && ((want_dst[kind] < 0) != (dd < 0) || (want_src[kind] < 0) != (sdv < 0)))
        rc = SD_EINVAL;
    else if (wait)
        rc = sync_refused(stream, ptsz);
    if (!rc) {
        struct sd_op proto = {.kind = OP_COPY, .u.copy = {dst, src, n, dd, sdv}};
        struct sd_stream *s;
        uint64_t seq;
        rc = sd_submit(stream, ptsz, &proto, &s, &seq);
        if (!rc && wait) {
            sd_wait_seq(s, seq);
            rc = s->dev->sticky;
        } else if (!rc && n && dd < 0 && !s->capture &&
                   !sd_table_find_containing(&host_allocs, (uintptr_t)dst)) {
            /* Into pageable host memory an asynchronous copy returns only once it is done, as
             * the real driver's does (CUDA's "API synchronization behavior"): a program may
             * rely on it, and a test that wants a copy still in flight must use pinned memory,
             * as it must on a GPU. */
            sd_wait_seq(s, seq);
        }
    }
    pthread_mutex_unlock(&sd_lock);
    sd_price_floor(t0, sd_cfg.launch_us);
    return rc;
}

int sd_memset(void *dst, int value, size_t n, void *stream, int ptsz)
{
    double t0 = sd_now();
    int rc = sd_check_current();
    if (rc)
        return rc;
    pthread_mutex_lock(&sd_lock);
    int dd = where(dst);
    if (n && dd < 0 && !managed_of(dst)) {
        rc = SD_EINVAL;
    } else {
        struct sd_op proto = {.kind = OP_SET, .u.set = {dst, value, n, dd}};
        rc = sd_submit(stream, ptsz, &proto, NULL, NULL);
    }
    pthread_mutex_unlock(&sd_lock);
    sd_price_floor(t0, sd_cfg.launch_us);
    return rc;
}
