/* sd_ipc.c: interprocess device memory (cuIpc* / hipIpc*). Device memory is private anonymous
 * memory, which another process cannot reach; so an allocation's first export moves its bytes
 * into a memfd mapped over the same addresses, and the handle names that memfd as
 * /proc/<pid>/fd/<n>. The importer opens that path (the exporter must be alive, as a real
 * driver also needs) and maps the memfd into its own device range: both processes then see the
 * same bytes. Only exported allocations change backing, so everything else the simulator
 * models (faults on freed memory, capacity, sparse allocations) stays as it was. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sd_internal.h"

#define IPC_MAGIC 0x50494453u /* "SDIP" */

/* The handle: the first 32 bytes are the simulator's (ROCr's opaque handle in ROCm), then
 * ROCm's psize, poffset and owner's process id at their offsets in ihipIpcMemHandle_t. */
struct ipc_handle {
    uint32_t magic;
    int32_t pid;
    int32_t fd;
    int32_t dev;
    uint64_t id;
    uint64_t lead; /* the allocation's offset into its first page (SIMDEV_BASE_OFFSET) */
    uint64_t psize;
    uint64_t poffset;
    int32_t owner_pid;
    unsigned char reserved[12];
};
_Static_assert(sizeof(struct ipc_handle) == SD_IPC_HANDLE_SIZE, "a handle is 64 bytes");

static uint64_t exports; /* numbers every export of the process; under sd_lock */

static void memfd_name(char *buf, size_t n, uint64_t id)
{
    snprintf(buf, n, "simdevice-ipc-%llu", (unsigned long long)id);
}

static bool zero_page(const unsigned char *p, size_t n)
{
    const uint64_t *w = (const uint64_t *)(const void *)p;
    for (size_t i = 0; i < n / sizeof *w; i++)
        if (w[i])
            return false;
    return true;
}

/* Moves a's bytes into a fresh memfd and maps it in their place. Only pages holding data are
 * written (an untouched page reads as the shared zero page), so a large sparse allocation stays
 * cheap. Stream work is held off with the device's access lock; a host thread writing the
 * memory during the move may lose that write. Under sd_lock. */
static int share(struct sd_device *d, struct sd_alloc *a)
{
    char name[48];
    memfd_name(name, sizeof name, exports + 1);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)a->span) != 0) {
        if (fd >= 0)
            close(fd);
        return SD_ENOMEM;
    }
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    int rc = SD_OK;
    pthread_rwlock_wrlock(&d->access);
    for (size_t off = 0; off < a->span && rc == SD_OK; off += ps) {
        const unsigned char *page = (const unsigned char *)(sd_alloc_start(a) + off);
        if (!zero_page(page, ps) && pwrite(fd, page, ps, (off_t)off) != (ssize_t)ps)
            rc = SD_ENOMEM;
    }
    if (rc == SD_OK && mmap((void *)sd_alloc_start(a), a->span, PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
        rc = SD_ENOMEM; /* MAP_FIXED failing leaves the old mapping in place */
    pthread_rwlock_unlock(&d->access);
    if (rc != SD_OK) {
        close(fd);
        return rc;
    }
    a->ipc = SD_IPC_EXPORTED;
    a->fd = fd;
    a->ipc_id = ++exports;
    return SD_OK;
}

int sd_ipc_export(const void *p, void *handle, int with_offset)
{
    int rc = sd_check_current();
    if (rc)
        return rc;
    if (!handle || !p)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    struct sd_device *d = sd_dev_of(p);
    struct sd_alloc *a = d ? sd_table_find_containing(&d->allocs, (uintptr_t)p) : NULL;
    /* Only memory of sd_malloc can be exported: pool, VMM and imported memory cannot, as
     * cuIpcGetMemHandle refuses cuMemAllocAsync and cuMemCreate memory. */
    if (!a || !sd_ipc_exportable(a) || a->free_pending)
        rc = SD_EINVAL;
    else if (a->ipc != SD_IPC_EXPORTED)
        rc = share(d, a);
    if (rc == SD_OK) {
        struct ipc_handle h = {.magic = IPC_MAGIC, .pid = (int32_t)getpid(), .fd = a->fd,
                               .dev = d->id, .id = a->ipc_id, .lead = a->lead,
                               .psize = a->size,
                               .poffset = with_offset ? (uintptr_t)p - a->addr : 0,
                               .owner_pid = (int32_t)getpid()};
        memcpy(handle, &h, sizeof h);
    }
    pthread_mutex_unlock(&sd_lock);
    sd_log("ipc export(%p) -> %d", p, rc);
    return rc;
}

/* The calling context's open mapping of export (pid, id) on d, or NULL. Under sd_lock. */
static struct sd_alloc *opened(struct sd_device *d, int pid, uint64_t id)
{
    for (size_t i = 0; i < d->allocs.n; i++) {
        struct sd_alloc *a = &d->allocs.v[i];
        if (a->ipc == SD_IPC_IMPORTED && a->ipc_pid == pid && a->ipc_id == id &&
            a->owner == sd_owner_get())
            return a;
    }
    return NULL;
}

/* Opens the exporter's memfd, checking by its name that the descriptor is still the export's
 * (a freed allocation's number may have gone to another file since). -1 when it is gone. */
static int open_export(const struct ipc_handle *h)
{
    char path[64], link[128], name[48];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)h->pid, (int)h->fd);
    ssize_t n = readlink(path, link, sizeof link - 1);
    if (n < 0)
        return -1;
    link[n] = '\0';
    memfd_name(name, sizeof name, h->id);
    size_t k = strlen("/memfd:");
    if (strncmp(link, "/memfd:", k) != 0 || strncmp(link + k, name, strlen(name)) != 0)
        return -1;
    char end = link[k + strlen(name)];
    if (end != '\0' && end != ' ')
        return -1;
    return open(path, O_RDWR | O_CLOEXEC);
}

/* Maps the export's memfd at a fresh place of d's range; *at gets the allocation's start (its
 * lead into the first page, as the exporter's). Under sd_lock. */
static int map_import(struct sd_device *d, const struct ipc_handle *h, uintptr_t *at)
{
    size_t ps = (size_t)sysconf(_SC_PAGESIZE);
    if (h->lead >= ps)
        return SD_EINVAL;
    size_t span = (h->lead + h->psize + ps - 1) / ps * ps;
    int fd = open_export(h);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (uint64_t)st.st_size < span) {
        if (fd >= 0)
            close(fd);
        return SD_EMAP;
    }
    int rc = sd_dev_place(d, span, at);
    if (rc == SD_OK && mmap((void *)*at, span, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                            fd, 0) == MAP_FAILED)
        rc = SD_EMAP;
    close(fd); /* the mapping keeps the memory */
    if (rc != SD_OK)
        return rc;
    uintptr_t start = *at;
    *at += h->lead;
    /* Imported memory is the exporter's: it counts against no capacity here (rsize 0). */
    struct sd_alloc a = {.addr = *at, .size = h->psize, .span = span, .lead = h->lead,
                         .owner = sd_owner_get(),
                         .ipc = SD_IPC_IMPORTED, .ipc_id = h->id, .ipc_pid = h->pid,
                         .ipc_refs = 1};
    if (sd_table_insert(&d->allocs, &a) != 0) {
        sd_ipc_unback(start, span, SD_IPC_IMPORTED, -1);
        return SD_ENOMEM;
    }
    return SD_OK;
}

int sd_ipc_open(const void *handle, void **p)
{
    int rc = sd_check_current();
    if (rc)
        return rc;
    if (!handle || !p)
        return SD_EINVAL;
    struct ipc_handle h;
    memcpy(&h, handle, sizeof h);
    if (h.magic != IPC_MAGIC || h.pid <= 0 || h.psize == 0 || h.poffset >= h.psize)
        return SD_EINVAL;
    /* A real driver refuses a handle of the opening process itself with "invalid context". */
    if (h.pid == (int32_t)getpid())
        return SD_ECONTEXT;
    pthread_mutex_lock(&sd_lock);
    struct sd_device *d = sd_cur();
    struct sd_alloc *a = opened(d, h.pid, h.id);
    uintptr_t at = 0;
    if (a) {
        a->ipc_refs++;
        at = a->addr;
    } else {
        rc = map_import(d, &h, &at);
    }
    pthread_mutex_unlock(&sd_lock);
    if (rc == SD_OK)
        *p = (void *)(at + h.poffset);
    sd_log("ipc open(pid %d, export %llu) on device %d -> %d %p", (int)h.pid,
           (unsigned long long)h.id, d->id, rc, rc ? NULL : *p);
    return rc;
}

/* The imported allocation starting at (or, with `inside`, holding) p. Under sd_lock. */
static struct sd_alloc *imported_at(const void *p, int inside, struct sd_device **d)
{
    *d = sd_dev_of(p);
    if (!*d)
        return NULL;
    struct sd_alloc *a = inside ? sd_table_find_containing(&(*d)->allocs, (uintptr_t)p)
                                : sd_table_find_start(&(*d)->allocs, (uintptr_t)p);
    return a && a->ipc == SD_IPC_IMPORTED ? a : NULL;
}

int sd_ipc_close(const void *p, int inside)
{
    int rc = sd_check_current();
    if (rc)
        return rc;
    if (!p)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    struct sd_device *d;
    struct sd_alloc *a = imported_at(p, inside, &d);
    if (a && a->ipc_refs == 1) {
        /* Work already queued may still touch the mapping: the device finishes it first. */
        uintptr_t addr = a->addr;
        sd_wait_device(d);
        a = imported_at(p, inside, &d);
        if (a && a->addr != addr)
            a = NULL;
    }
    if (!a)
        rc = SD_EHANDLE;
    else if (--a->ipc_refs == 0)
        sd_dev_release(d, a->addr);
    pthread_mutex_unlock(&sd_lock);
    sd_log("ipc close(%p) -> %d", p, rc);
    return rc;
}
