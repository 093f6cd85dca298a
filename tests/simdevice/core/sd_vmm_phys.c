/* sd_vmm_phys.c: physical memory behind VMM handles. Each handle is a range of one sparse
 * memfd shared by the process, so creating it costs no RAM until touched and every mapping of
 * it shows the same bytes (one descriptor for all: a program may hold thousands of handles).
 * A handle is the address of its record, validated through a set as streams are. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sd_vmm_internal.h"

static int memfd = -1;
static off_t file_end; /* ranges are never reused: a freed one is punched out instead */
static struct sd_set live;  /* handles not yet released */
static struct vmm_phys *all; /* every record not yet freed */

struct vmm_phys *vmm_phys_of(uint64_t h)
{
    void *p = (void *)(uintptr_t)h;
    return sd_set_has(&live, p) ? p : NULL;
}

/* A fresh range of `size` bytes of the memfd, growing it. */
static int file_range(size_t size, off_t *out)
{
    if (memfd < 0) {
        memfd = memfd_create("simdevice-vmm", MFD_CLOEXEC);
        if (memfd < 0) {
            fprintf(stderr, "simdevice: memfd_create: %s\n", strerror(errno));
            return SD_ENOMEM;
        }
    }
    if (ftruncate(memfd, file_end + (off_t)size) != 0)
        return SD_ENOMEM;
    *out = file_end;
    file_end += (off_t)size;
    return SD_OK;
}

int vmm_phys_new(struct sd_device *d, size_t size, struct vmm_phys **out)
{
    if (!sd_dev_fits(d, size)) {
        d->c.oom++;
        return SD_ENOMEM;
    }
    struct vmm_phys *ph = calloc(1, sizeof *ph);
    if (!ph || file_range(size, &ph->file_off) != SD_OK || sd_set_add(&live, ph) != 0) {
        free(ph);
        d->c.oom++;
        return SD_ENOMEM;
    }
    ph->dev = d->id;
    ph->size = size;
    ph->next = all;
    if (all)
        all->prev = ph;
    all = ph;
    sd_dev_grow(d, size);
    *out = ph;
    return SD_OK;
}

int vmm_phys_map(const struct vmm_phys *ph, uintptr_t p, size_t size, size_t offset)
{
    void *m = mmap((void *)p, size, PROT_NONE, MAP_SHARED | MAP_FIXED, memfd,
                   ph->file_off + (off_t)offset);
    return m == MAP_FAILED ? SD_ENOMEM : SD_OK;
}

void vmm_phys_release(struct vmm_phys *ph)
{
    sd_set_del(&live, ph);
    ph->released = true;
}

void vmm_phys_put(struct vmm_phys *ph)
{
    if (!ph->released || ph->maps)
        return;
    fallocate(memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, ph->file_off, (off_t)ph->size);
    sd_dev_shrink(&sd_dev[ph->dev], ph->size);
    if (ph->prev)
        ph->prev->next = ph->next;
    else
        all = ph->next;
    if (ph->next)
        ph->next->prev = ph->prev;
    free(ph);
}

struct vmm_phys *vmm_phys_first_of(const struct sd_device *d)
{
    for (struct vmm_phys *ph = all; ph; ph = ph->next)
        if (ph->dev == d->id)
            return ph;
    return NULL;
}
