/* sd_device.c: devices and the lock that guards them, the calling thread's current device, owner
 * and last error, the sticky fault, and the counters (also written at exit). Every other file
 * uses these, so nothing here calls up: synchronizing and resetting a device, which reach into
 * every subsystem, are in sd_device_ops.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "sd_internal.h"

pthread_mutex_t sd_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t sd_cv = PTHREAD_COND_INITIALIZER;
struct sd_device sd_dev[SD_MAX_DEVICES];

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static __thread int cur_dev;
static __thread int last_err;
/* The driver context the thread's new allocations and streams are tagged with: thread state like
 * the current device, and read by the address space, which must not call up into sd_owner.c. */
static __thread void *cur_owner;

static void init_all(void)
{
    sd_config_init();
    for (int i = 0; i < SD_MAX_DEVICES; i++) {
        sd_dev[i].id = i;
        pthread_rwlock_init(&sd_dev[i].access, NULL);
    }
}

void sd_init(void)
{
    pthread_once(&init_once, init_all);
}

struct sd_device *sd_cur(void)
{
    return &sd_dev[cur_dev];
}

void sd_set_owner(void *owner)
{
    cur_owner = owner;
}

void *sd_owner_get(void)
{
    return cur_owner;
}

int sd_device_count(int *n)
{
    if (!n)
        return SD_EINVAL;
    sd_init();
    *n = sd_cfg.devices;
    return *n ? SD_OK : SD_ENODEV;
}

int sd_set_device(int dev)
{
    sd_init();
    if (dev < 0 || dev >= sd_cfg.devices)
        return SD_EDEVICE;
    cur_dev = dev;
    return SD_OK;
}

int sd_get_device(int *dev)
{
    if (!dev)
        return SD_EINVAL;
    sd_init();
    *dev = cur_dev;
    return SD_OK;
}

int sd_check_device_arg(const void *out, int dev)
{
    if (!out)
        return SD_EINVAL;
    sd_init();
    return dev < 0 || dev >= sd_cfg.devices ? SD_EDEVICE : SD_OK;
}

int sd_hip_reentrant(void)
{
    sd_init();
    return sd_cfg.hip_reentrant;
}

size_t sd_capacity(void)
{
    sd_init();
    return sd_cfg.memory;
}

int sd_check_current(void)
{
    sd_init();
    if (sd_cfg.devices == 0)
        return SD_ENODEV;
    pthread_mutex_lock(&sd_lock);
    int rc = sd_cur()->sticky;
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

void sd_record_error(int code)
{
    last_err = code;
}

int sd_ret(int rc, int badfree)
{
    if (rc == SD_EBADFREE)
        rc = badfree;
    if (rc != SD_OK && rc != SD_ENOTREADY)
        sd_record_error(rc);
    return rc;
}

int sd_last_error(int clear)
{
    sd_init();
    int sticky = 0;
    if (sd_cfg.devices) {
        pthread_mutex_lock(&sd_lock);
        sticky = sd_cur()->sticky;
        pthread_mutex_unlock(&sd_lock);
    }
    int e = last_err;
    if (clear)
        last_err = 0;
    return sticky ? sticky : e;
}

int sd_launch_refused(const char *what)
{
    int rc = sd_check_current();
    if (rc)
        return rc;
    sd_log("%s: kernels cannot run on the simulated device", what);
    return SD_ENOTSUP;
}

static void add(struct simdev_counters *t, const struct simdev_counters *c)
{
    t->malloc_calls += c->malloc_calls;
    t->malloc_bytes += c->malloc_bytes;
    t->free_calls += c->free_calls;
    t->free_bytes += c->free_bytes;
    t->malloc_async_calls += c->malloc_async_calls;
    t->free_async_calls += c->free_async_calls;
    t->device_syncs += c->device_syncs;
    t->faults += c->faults;
    t->invalid_frees += c->invalid_frees;
    t->reserved_bytes += c->reserved_bytes;
    t->peak_reserved_bytes += c->peak_reserved_bytes;
    t->oom += c->oom;
    t->events_recorded += c->events_recorded;
    t->stream_waits += c->stream_waits;
    t->injected_faults += c->injected_faults;
    t->vmm_creates += c->vmm_creates;
    t->vmm_releases += c->vmm_releases;
    t->maps += c->maps;
    t->unmaps += c->unmaps;
    t->vmm_exports += c->vmm_exports;
    t->vmm_imports += c->vmm_imports;
    t->host_allocs += c->host_allocs;
    t->host_frees += c->host_frees;
    t->host_bytes += c->host_bytes;
}

int sd_get_counters(int device, struct simdev_counters *out)
{
    sd_init();
    if (!out || device < -1 || device >= sd_cfg.devices)
        return -1;
    pthread_mutex_lock(&sd_lock);
    if (device >= 0) {
        *out = sd_dev[device].c;
    } else {
        memset(out, 0, sizeof *out);
        for (int i = 0; i < sd_cfg.devices; i++)
            add(out, &sd_dev[i].c);
    }
    pthread_mutex_unlock(&sd_lock);
    return 0;
}

static void write_counters(FILE *f, const char *prefix, const struct simdev_counters *c)
{
#define W(name) fprintf(f, "%s" #name "=%" PRIu64 "\n", prefix, c->name)
    W(malloc_calls); W(malloc_bytes); W(free_calls); W(free_bytes);
    W(malloc_async_calls); W(free_async_calls); W(device_syncs); W(faults);
    W(invalid_frees); W(reserved_bytes); W(peak_reserved_bytes); W(oom);
    W(events_recorded); W(stream_waits); W(injected_faults);
    W(vmm_creates); W(vmm_releases); W(maps); W(unmaps); W(vmm_exports); W(vmm_imports);
    W(host_allocs); W(host_frees); W(host_bytes);
#undef W
}

__attribute__((destructor)) static void sd_at_exit(void)
{
    sd_init();
    if (!sd_cfg.counters_file)
        return;
    FILE *f = fopen(sd_cfg.counters_file, "w");
    if (!f) {
        fprintf(stderr, "simdevice: cannot write SIMDEV_COUNTERS_FILE=%s\n", sd_cfg.counters_file);
        return;
    }
    /* Workers may still run: take the lock so each device's counters are one snapshot, but
     * never hang an exiting process on it. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    bool locked = pthread_mutex_timedlock(&sd_lock, &ts) == 0;
    struct simdev_counters total = {0};
    for (int i = 0; i < sd_cfg.devices; i++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "device.%d.", i);
        write_counters(f, prefix, &sd_dev[i].c);
        add(&total, &sd_dev[i].c);
    }
    if (locked)
        pthread_mutex_unlock(&sd_lock);
    write_counters(f, "", &total);
    fclose(f);
}
