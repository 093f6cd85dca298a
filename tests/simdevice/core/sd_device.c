/* sd_device.c: devices, the calling thread's current device, owner and last error, the sticky
 * fault, device synchronization and reset, and the counters (also written at exit). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "sd_capture.h"

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

int sd_device_sync(void)
{
    int rc = sd_check_current();
    if (rc)
        return rc;
    pthread_mutex_lock(&sd_lock);
    struct sd_device *d = sd_cur();
    if ((rc = sd_capture_device_sync(d)) != SD_OK) {
        pthread_mutex_unlock(&sd_lock);
        return rc;
    }
    d->c.device_syncs++;
    sd_wait_device(d);
    sd_pool_sync_trim(); /* a pool gives memory back at a synchronization */
    rc = d->sticky;
    pthread_mutex_unlock(&sd_lock);
    sd_inject_sync_delay();
    return rc;
}

int sd_device_reset(void)
{
    sd_init();
    if (sd_cfg.devices == 0)
        return SD_ENODEV;
    pthread_mutex_lock(&sd_lock);
    struct sd_device *d = sd_cur();
    /* Every stream drains and exits: user handles die, default streams are recreated lazily. */
    if (d->legacy) {
        sd_stream_close(d->legacy);
        d->legacy = NULL;
    }
    for (size_t i = 0; i < sd_streams_set.cap; i++) {
        struct sd_stream *s = (struct sd_stream *)sd_streams_set.v[i];
        if ((uintptr_t)s > 1 && s->dev == d) {
            sd_set_del(&sd_streams_set, s);
            sd_stream_close(s);
        }
    }
    for (struct sd_stream *s = d->streams; s; s = s->next)
        if (s->kind == SK_PERTHREAD && !s->closing) {
            s->closing = true; /* its owner thread sees the new generation and forgets it */
            s->refs--;         /* the owner's reference; the worker still holds one */
            pthread_cond_signal(&s->work);
        }
    d->gen++;
    while (d->streams)
        pthread_cond_wait(&sd_cv, &sd_lock);
    sd_events_drop_device(d);
    if (d->base) {
        while (d->allocs.n)
            sd_dev_release(d, d->allocs.v[d->allocs.n - 1].addr);
        d->cursor = d->base;
    }
    sd_vmm_drop_device(d);
    sd_pool_drop_device(d);
    d->sticky = 0;
    pthread_mutex_unlock(&sd_lock);
    return SD_OK;
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
    W(vmm_creates); W(vmm_releases); W(maps); W(unmaps);
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
