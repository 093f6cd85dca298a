/* sd_vmm.c: virtual memory management (cuMem* / hipMem*): address reservations, physical
 * handles and mappings. A mapping starts inaccessible; set-access opens it to a device (and
 * makes the host pages readable or writable, as a live cudaMalloc allocation's are). Errors
 * are the codes the CUDA driver documents: SD_EINVAL for bad arguments and unknown handles,
 * SD_ENOMEM, SD_EDEVICE where a device is named. Each call spins its modelled cost. */
#include <sys/mman.h>

#include "sd_vmm_internal.h"

/* The sticky fault, then `bad` arguments, then a `bad_dev` device; when all pass, spins `us`
 * and takes sd_lock. */
static int begin(bool bad, bool bad_dev, double us)
{
    int rc = sd_check_current();
    if (rc)
        return rc;
    if (bad)
        return SD_EINVAL;
    if (bad_dev)
        return SD_EDEVICE;
    sd_spin_serial_us(us);
    pthread_mutex_lock(&sd_lock);
    return SD_OK;
}

static int end(int rc, const char *what, uintptr_t p)
{
    pthread_mutex_unlock(&sd_lock);
    sd_log("%s(%p) -> %d", what, (void *)p, rc);
    return rc;
}

static bool bad_device(int dev)
{
    sd_init();
    return dev < 0 || dev >= sd_cfg.devices;
}

static bool granular(size_t n)
{
    return n % SD_VMM_GRANULE == 0;
}

/* Waits for every in-flight copy and set: one may be inside pages about to lose their backing
 * or their protection. All devices, since an access may span mappings of several. Copies start
 * only under sd_lock, which the caller holds, so none can begin meanwhile. */
static void drain(void)
{
    for (int i = 0; i < sd_cfg.devices; i++) {
        pthread_rwlock_wrlock(&sd_dev[i].access);
        pthread_rwlock_unlock(&sd_dev[i].access);
    }
}

int sd_vmm_granularity(size_t *out, int dev)
{
    sd_init();
    if (!out || dev < 0 || dev >= sd_cfg.devices)
        return SD_EINVAL; /* a bad location is a bad property: cuMemGetAllocationGranularity */
    *out = SD_VMM_GRANULE;
    return SD_OK;
}

int sd_vmm_reserve(void **ptr, size_t size, size_t alignment, uintptr_t hint)
{
    int rc = begin(!ptr || !size || !granular(size) || (alignment & (alignment - 1)), false,
                   sd_cfg.vmm_reserve_us);
    if (rc)
        return rc;
    uintptr_t at = 0;
    rc = vmm_place(&at, size, alignment > SD_VMM_GRANULE ? alignment : SD_VMM_GRANULE, hint);
    struct vmm_span r = {.addr = at, .size = size};
    if (!rc && vmm_insert(&sd_vmm_reservations, &r) != 0)
        rc = SD_ENOMEM;
    if (!rc)
        *ptr = (void *)at;
    return end(rc, "vmm_reserve", at);
}

int sd_vmm_free(void *ptr, size_t size)
{
    uintptr_t p = (uintptr_t)ptr;
    int rc = begin(!ptr || !size, false, sd_cfg.vmm_free_us);
    if (rc)
        return rc;
    struct vmm_span *r = vmm_containing(&sd_vmm_reservations, p);
    /* The docs leave a free over live mappings open; ROCm's runtime refuses it, and refusing
     * points a test at the unmap it forgot. */
    if (!r || r->addr != p || r->size != size || vmm_overlaps(&sd_vmm_mappings, p, size))
        rc = SD_EINVAL;
    else
        vmm_cut(&sd_vmm_reservations, (size_t)(r - sd_vmm_reservations.v), 1);
    return end(rc, "vmm_free", p);
}

int sd_vmm_create(uint64_t *handle, size_t size, int dev, int shareable)
{
    int rc = begin(!handle || !size || !granular(size), bad_device(dev), sd_cfg.vmm_create_us);
    if (rc)
        return rc;
    struct vmm_phys *ph = NULL;
    rc = vmm_phys_new(&sd_dev[dev], size, shareable != 0, &ph);
    if (!rc) {
        sd_dev[dev].c.vmm_creates++;
        *handle = (uint64_t)(uintptr_t)ph;
    }
    return end(rc, "vmm_create", (uintptr_t)ph);
}

/* Export and import are unmeasured: they cost what a creation does. */
int sd_vmm_export(int *fd, uint64_t handle)
{
    int rc = begin(!fd, false, sd_cfg.vmm_create_us);
    if (rc)
        return rc;
    struct vmm_phys *ph = vmm_phys_of(handle);
    rc = ph ? vmm_phys_export(ph, fd) : SD_EINVAL;
    if (!rc)
        sd_dev[ph->dev].c.vmm_exports++;
    return end(rc, "vmm_export", (uintptr_t)handle);
}

int sd_vmm_import(uint64_t *handle, int fd)
{
    int rc = begin(!handle || fd < 0, false, sd_cfg.vmm_create_us);
    if (rc)
        return rc;
    struct vmm_phys *ph = NULL;
    rc = vmm_phys_import(fd, &ph);
    if (!rc) {
        sd_dev[ph->dev].c.vmm_imports++;
        *handle = (uint64_t)(uintptr_t)ph;
    }
    return end(rc, "vmm_import", (uintptr_t)ph);
}

/* Unmeasured: it costs what a release does. */
int sd_vmm_retain(uint64_t *handle, void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    int rc = begin(!handle, false, sd_cfg.vmm_release_us);
    if (rc)
        return rc;
    struct vmm_span *m = sd_vmm_holds(p) ? vmm_containing(&sd_vmm_mappings, p) : NULL;
    rc = m ? vmm_phys_retain(m->phys) : SD_EINVAL;
    if (!rc)
        *handle = (uint64_t)(uintptr_t)m->phys;
    return end(rc, "vmm_retain", p);
}

int sd_vmm_release(uint64_t handle)
{
    int rc = begin(false, false, sd_cfg.vmm_release_us);
    if (rc)
        return rc;
    struct vmm_phys *ph = vmm_phys_of(handle);
    if (!ph) {
        rc = SD_EINVAL;
    } else {
        sd_dev[ph->dev].c.vmm_releases++;
        vmm_phys_release(ph);
        vmm_phys_put(ph);
    }
    return end(rc, "vmm_release", (uintptr_t)handle);
}

static int map_locked(uintptr_t p, size_t size, size_t offset, uint64_t handle)
{
    struct vmm_phys *ph = vmm_phys_of(handle);
    struct vmm_span *r = vmm_containing(&sd_vmm_reservations, p);
    if (!ph || offset > ph->size || size > ph->size - offset || !r ||
        size > r->addr + r->size - p || vmm_overlaps(&sd_vmm_mappings, p, size))
        return SD_EINVAL;
    int rc = vmm_phys_map(ph, p, size, offset);
    struct vmm_span m = {.addr = p, .size = size, .phys = ph, .offset = offset};
    if (!rc && vmm_insert(&sd_vmm_mappings, &m) != 0) {
        vmm_unback(p, size);
        rc = SD_ENOMEM;
    }
    if (!rc) {
        ph->maps++;
        sd_dev[ph->dev].c.maps++;
    }
    return rc;
}

int sd_vmm_map(void *ptr, size_t size, size_t offset, uint64_t handle)
{
    uintptr_t p = (uintptr_t)ptr;
    int rc = begin(!size || !granular(p) || !granular(size) || !granular(offset), false,
                   sd_cfg.vmm_map_us);
    if (rc)
        return rc;
    return end(map_locked(p, size, offset, handle), "vmm_map", p);
}

int sd_vmm_unmap(void *ptr, size_t size)
{
    uintptr_t p = (uintptr_t)ptr;
    int rc = begin(false, false, sd_cfg.vmm_unmap_us);
    if (rc)
        return rc;
    size_t first, count;
    if (!vmm_run(p, size, &first, &count))
        return end(SD_EINVAL, "vmm_unmap", p);
    drain();
    vmm_unback(p, size);
    for (size_t i = first; i < first + count; i++) {
        /* One at a time: a handle mapped twice in the range is freed only at its last. */
        struct vmm_phys *ph = sd_vmm_mappings.v[i].phys;
        ph->maps--;
        sd_dev[ph->dev].c.unmaps++;
        vmm_phys_put(ph);
    }
    vmm_cut(&sd_vmm_mappings, first, count);
    rc = end(SD_OK, "vmm_unmap", p);
    sd_spin_serial_us((double)(count - 1) * sd_cfg.vmm_unmap_us); /* a GPU's price is per mapping */
    return rc;
}

int sd_vmm_set_access(void *ptr, size_t size, int dev, int flags)
{
    uintptr_t p = (uintptr_t)ptr;
    int rc = begin(flags != 0 && flags != 1 && flags != 3, bad_device(dev), sd_cfg.vmm_access_us);
    if (rc)
        return rc;
    size_t first, count;
    if (!vmm_run(p, size, &first, &count))
        return end(SD_EINVAL, "vmm_set_access", p);
    drain();
    uint64_t bit = (uint64_t)1 << dev;
    for (size_t i = first; i < first + count; i++) {
        struct vmm_span *m = &sd_vmm_mappings.v[i];
        m->readers = flags ? m->readers | bit : m->readers & ~bit;
        m->writers = flags == 3 ? m->writers | bit : m->writers & ~bit;
        /* The host sees the union of the devices' rights: the simulator's copies run there. */
        int prot = m->writers ? PROT_READ | PROT_WRITE : m->readers ? PROT_READ : PROT_NONE;
        mprotect((void *)m->addr, m->size, prot);
    }
    rc = end(SD_OK, "vmm_set_access", p);
    sd_spin_serial_us((double)(count - 1) * sd_cfg.vmm_access_us); /* per mapping, as unmapping */
    return rc;
}

void sd_vmm_drop_device(struct sd_device *d)
{
    struct vmm_spans *t = &sd_vmm_mappings;
    bool drained = false;
    for (size_t i = t->n; i-- > 0;) {
        struct vmm_phys *ph = t->v[i].phys;
        if (ph->dev != d->id)
            continue;
        if (!drained) {
            drain();
            drained = true;
        }
        vmm_unback(t->v[i].addr, t->v[i].size);
        ph->maps--;
        vmm_cut(t, i, 1);
    }
    /* Created, retained and imported alike; a handle's own memfd is closed with it. */
    for (struct vmm_phys *ph; (ph = vmm_phys_first_of(d));) {
        vmm_phys_forget(ph);
        vmm_phys_put(ph);
    }
}

int sd_vmm_prop_device(int alloc_type, int loc_type, int loc_id)
{
    enum { PINNED = 1, DEVICE = 1 };
    return alloc_type == PINNED && loc_type == DEVICE ? loc_id : -1;
}

int sd_vmm_set_access_list(void *ptr, size_t size, const struct sd_vmm_access *d, size_t n)
{
    enum { DEVICE = 1 };
    if (!d || !n)
        return SD_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (d[i].loc_type != DEVICE)
            return SD_EINVAL;
    int rc = SD_OK;
    for (size_t i = 0; i < n && !rc; i++)
        rc = sd_vmm_set_access(ptr, size, d[i].loc_id, d[i].flags);
    return rc;
}
