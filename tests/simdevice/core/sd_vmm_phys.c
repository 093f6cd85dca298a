/* sd_vmm_phys.c: physical memory behind VMM handles. Each handle is a range of one sparse
 * memfd shared by the process, so creating it costs no RAM until touched and every mapping of
 * it shows the same bytes (one descriptor for all: a program may hold thousands of handles).
 * Memory another process may map (created shareable, or imported) has a memfd of its own
 * instead, since a descriptor handed out must reach that memory and no other.
 * A handle is the address of its record, validated through a set as streams are. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sd_vmm_internal.h"

static int memfd = -1;
static off_t file_end; /* ranges are never reused: a freed one is punched out instead */
static struct sd_set live;  /* handles with references left */
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

/* Links a new record in front of every live one and records its handle. */
static int link_new(struct vmm_phys *ph)
{
    if (sd_set_add(&live, ph) != 0)
        return SD_ENOMEM;
    ph->refs = 1;
    ph->next = all;
    if (all)
        all->prev = ph;
    all = ph;
    return SD_OK;
}

#define SHARE_NAME "simdevice-vmm-share."

/* A memfd of `size` bytes of its own, named for device dev so an importer learns it. */
static int own_memfd(int dev, size_t size)
{
    char name[48];
    snprintf(name, sizeof name, SHARE_NAME "%d", dev);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "simdevice: memfd_create: %s\n", strerror(errno));
        return -1;
    }
    if (ftruncate(fd, (off_t)size) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int vmm_phys_new(struct sd_device *d, size_t size, bool shareable, struct vmm_phys **out)
{
    if (!sd_dev_fits(d, size)) {
        d->c.oom++;
        return SD_ENOMEM;
    }
    struct vmm_phys *ph = calloc(1, sizeof *ph);
    if (ph) {
        ph->fd = shareable ? own_memfd(d->id, size) : -1;
        ph->shareable = shareable;
    }
    if (!ph || (shareable ? ph->fd < 0 : file_range(size, &ph->file_off) != SD_OK) ||
        link_new(ph) != SD_OK) {
        if (ph && ph->fd >= 0)
            close(ph->fd);
        free(ph);
        d->c.oom++;
        return SD_ENOMEM;
    }
    ph->dev = d->id;
    ph->size = size;
    sd_dev_grow(d, size);
    *out = ph;
    return SD_OK;
}

int vmm_phys_export(const struct vmm_phys *ph, int *fd)
{
    if (!ph->shareable)
        return SD_EINVAL;
    *fd = fcntl(ph->fd, F_DUPFD_CLOEXEC, 0);
    return *fd < 0 ? SD_ENOMEM : SD_OK;
}

/* The device whose shared memory fd is (by the memfd's name, "/memfd:<name> (deleted)" in
 * /proc), or -1 when fd is anything else. */
static int share_device(int fd)
{
    char path[64], link[128];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n < 0)
        return -1;
    link[n] = '\0';
    const char *prefix = "/memfd:" SHARE_NAME;
    if (strncmp(link, prefix, strlen(prefix)) != 0)
        return -1;
    const char *p = link + strlen(prefix);
    int dev = 0;
    size_t digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 3; p++, digits++)
        dev = dev * 10 + (*p - '0');
    if (!digits || (*p != '\0' && *p != ' ') || dev >= sd_cfg.devices)
        return -1;
    return dev;
}

int vmm_phys_import(int fd, struct vmm_phys **out)
{
    struct stat st;
    int dev = share_device(fd);
    if (dev < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        (size_t)st.st_size % SD_VMM_GRANULE)
        return SD_EINVAL;
    struct vmm_phys *ph = calloc(1, sizeof *ph);
    if (!ph)
        return SD_ENOMEM;
    ph->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0); /* the caller keeps its own descriptor */
    if (ph->fd < 0 || link_new(ph) != SD_OK) {
        if (ph->fd >= 0)
            close(ph->fd);
        free(ph);
        return SD_ENOMEM;
    }
    ph->dev = dev;
    ph->size = (size_t)st.st_size;
    ph->shareable = true; /* the exporter's handle type travels with the memory */
    ph->imported = true;
    *out = ph;
    return SD_OK;
}

int vmm_phys_map(const struct vmm_phys *ph, uintptr_t p, size_t size, size_t offset)
{
    int fd = ph->fd >= 0 ? ph->fd : memfd;
    off_t at = (ph->fd >= 0 ? 0 : ph->file_off) + (off_t)offset;
    void *m = mmap((void *)p, size, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, at);
    return m == MAP_FAILED ? SD_ENOMEM : SD_OK;
}

int vmm_phys_retain(struct vmm_phys *ph)
{
    if (!ph->refs && sd_set_add(&live, ph) != 0)
        return SD_ENOMEM;
    ph->refs++;
    return SD_OK;
}

void vmm_phys_release(struct vmm_phys *ph)
{
    if (ph->refs && --ph->refs == 0)
        sd_set_del(&live, ph);
}

void vmm_phys_forget(struct vmm_phys *ph)
{
    if (ph->refs)
        sd_set_del(&live, ph);
    ph->refs = 0;
}

void vmm_phys_put(struct vmm_phys *ph)
{
    if (ph->refs || ph->maps)
        return;
    if (ph->fd >= 0)
        close(ph->fd); /* other processes' descriptors and mappings keep the memory */
    else
        fallocate(memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, ph->file_off,
                  (off_t)ph->size);
    if (!ph->imported)
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
