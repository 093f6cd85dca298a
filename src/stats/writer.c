/* The statistics writer: creates /cachealloc.<uid>.<pid>, publishes the source's counters into
 * it under per-record seqlocks, and runs the monitor thread (heartbeat, periodic snapshots,
 * reclaim requests from readers). Layout and protocol: stats/abi.h and docs/stats.md. */
#include "stats/writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "stats/abi.h"

_Static_assert(sizeof(ca_dev_stats) == sizeof(ca_stats_values) + sizeof(ca_stats_waits),
               "stats/abi.h fields and ca_dev_stats differ");

#define MONITOR_PERIOD_NS 250000000L
#define STOP_WAIT_S 1 /* how long exit waits for a reclaim in flight */
/* Reclaim requests cost the program what its cache gives back (the unmapping here, the
 * refill later): after a reclaim that took t of this thread's CPU time, the next waits until
 * max(GAP_MIN, GAP_FACTOR x t) has passed, at most GAP_MAX (half of what a neighbour waits
 * for an answer, so that a request is still answered in time). Requests posted meanwhile are
 * served together. docs/arena.md, "How often", has the measurements. */
#define RECLAIM_GAP_MIN_NS 10000000u
#define RECLAIM_GAP_FACTOR 50u
#define RECLAIM_GAP_MAX_NS 500000000u

/* One started segment; the monitor thread holds a pointer to it for its whole life. */
typedef struct writer_state {
    ca_stats_source src;
    ca_stats_header *hdr;
    size_t size;
    unsigned gen; /* the generation this segment belongs to */
    /* The device memory the monitor thread last asked for, published by every snapshot, so
     * that a publication from the program's own thread never calls the device (atomic). */
    uint64_t mem_total[CA_STATS_DEVICE_CAPACITY];
    uint64_t mem_free[CA_STATS_DEVICE_CAPACITY];
    unsigned char in_use[CA_STATS_DEVICE_CAPACITY]; /* as the last snapshot saw them */
    uint64_t given[CA_STATS_DEVICE_CAPACITY]; /* released at neighbours' requests (atomic) */
    /* Each device's names, asked once by the monitor thread (under rec_lock) and written into
     * its ident record by every snapshot (under pub_lock): known is set (release) last. */
    char uuid[CA_STATS_DEVICE_CAPACITY][CA_STATS_UUID_LEN];
    char pci_bus_id[CA_STATS_DEVICE_CAPACITY][CA_STATS_PCI_LEN];
    unsigned char known[CA_STATS_DEVICE_CAPACITY]; /* atomic */
    uint64_t next_reclaim_ns; /* no reclaim before (the monitor thread's own) */
} writer_state;

/* lock: start/stop. pub_lock: every write of records (short; never across a blocking call).
 * rec_lock: a reclaim or a device memory question in flight (the source's calls that reach the
 * device), so that stop can wait for it before unmapping and the source is not called after. The monitor
 * checks g_gen after taking pub_lock or rec_lock: a changed generation means "stopped, leave". */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_pub_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_rec_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned g_gen;              /* atomic */
static writer_state *g_state;       /* current segment, NULL when stopped */
static int g_failed;                /* a start failed: do not retry on every allocation */
static int g_atexit_done;
static char g_path[PATH_MAX];       /* shm name ("/cachealloc...") or file path */
static int g_in_dir;                /* g_path is a file path (CACHEALLOC_SHM_DIR) */

static unsigned current_gen(void) { return __atomic_load_n(&g_gen, __ATOMIC_ACQUIRE); }

static void read_cmdline(char *out, size_t len)
{
    out[0] = '\0';
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, len - 1);
    close(fd);
    if (n <= 0) {
        out[0] = '\0';
        return;
    }
    while (n > 0 && out[n - 1] == '\0')
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (out[i] == '\0')
            out[i] = ' ';
    out[n] = '\0';
}

static void copy_str(char *dst, size_t len, const char *src)
{
    if (!src)
        src = "";
    size_t n = strlen(src);
    if (n >= len)
        n = len - 1;
    memcpy(dst, src, n);
    memset(dst + n, 0, len - n);
}

/* The segment's name: a file path under CACHEALLOC_SHM_DIR (*in_dir set), else a POSIX
 * shared-memory name. -1 when it does not fit. */
static int segment_name(char *out, size_t len, int *in_dir)
{
    const char *dir = secure_getenv(CA_STATS_DIR_ENV); /* ignored in a setuid program */
    unsigned uid = (unsigned)geteuid();
    int pid = (int)getpid();
    int n;
    *in_dir = dir && *dir;
    if (*in_dir)
        n = snprintf(out, len, "%s/" CA_STATS_NAME_PREFIX "%u.%d", dir, uid, pid);
    else
        n = snprintf(out, len, "/" CA_STATS_NAME_PREFIX "%u.%d", uid, pid);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

int ca_stats_path(char *buf, size_t len)
{
    char name[sizeof g_path];
    int in_dir;
    if (segment_name(name, sizeof name, &in_dir) != 0)
        return -1;
    /* glibc keeps POSIX shared memory in /dev/shm. */
    int n = snprintf(buf, len, "%s%s", in_dir ? "" : "/dev/shm", name);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Create the segment file exclusively. A file already carrying our own pid is a leftover of a
 * dead process that had this pid: remove it once and retry. */
static int create_segment(void)
{
    if (segment_name(g_path, sizeof g_path, &g_in_dir) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd;
        if (g_in_dir)
            fd = open(g_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        else
            fd = shm_open(g_path, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd >= 0 || errno != EEXIST || attempt > 0)
            return fd;
        if ((g_in_dir ? unlink(g_path) : shm_unlink(g_path)) != 0)
            return -1;
    }
    return -1;
}

static void remove_segment(void)
{
    if (g_in_dir)
        unlink(g_path);
    else
        shm_unlink(g_path);
}

/* Release: each field's store is ordered after the odd sequence number before it, which a
 * release fence would do for all of them at once; ThreadSanitizer understands these and not
 * the fence, and on x86 every store is a release store anyway. */
static void put64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/* What a record carries besides the counters. */
typedef struct record_extra {
    uint64_t mem_total, mem_free, given;
} record_extra;

/* Seqlock write of one record: odd while inside, even when done. One writer at a time
 * (g_pub_lock). */
static void write_record(ca_stats_record *r, uint32_t device, const ca_dev_stats *s, int in_use,
                         const record_extra *x)
{
    uint64_t seq = __atomic_load_n(&r->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&r->seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&r->device, device, __ATOMIC_RELEASE);
    __atomic_store_n(&r->in_use, (uint32_t)in_use, __ATOMIC_RELEASE);
#define CA_PUT_FIELD_(name, kind, help) put64(&r->v.name, s->name);
    CA_STATS_FIELDS(CA_PUT_FIELD_)
#undef CA_PUT_FIELD_
    put64(&r->mem_total_bytes, x->mem_total);
    put64(&r->mem_free_bytes, x->mem_free);
    put64(&r->given_bytes, x->given);
#define CA_PUT_WAIT_(name, kind, help) put64(&r->w.name, s->name);
    CA_STATS_WAIT_FIELDS(CA_PUT_WAIT_)
#undef CA_PUT_WAIT_
    __atomic_store_n(&r->seq, seq + 2, __ATOMIC_RELEASE);
}

static ca_stats_record *record_at(ca_stats_header *h, unsigned i)
{
    return (ca_stats_record *)((char *)h + sizeof *h + (size_t)i * sizeof(ca_stats_record));
}

/* Seqlock write of device dev's names, once the monitor thread has them. */
static void write_ident(writer_state *st, int dev)
{
    if (!__atomic_load_n(&st->known[dev], __ATOMIC_ACQUIRE))
        return;
    ca_stats_ident *r = (ca_stats_ident *)record_at(
        st->hdr, CA_STATS_DEVICE_CAPACITY + CA_STATS_HOST_RECORDS + (unsigned)dev);
    uint64_t seq = __atomic_load_n(&r->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&r->seq, seq + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    __atomic_store_n(&r->device, (uint32_t)dev, __ATOMIC_RELAXED);
    __atomic_store_n(&r->known, 1u, __ATOMIC_RELAXED);
    /* Byte by byte, atomically: a reader copies the record while this runs (the seqlock tells
     * it to try again), and a sanitizer must see no plain race. */
    for (size_t i = 0; i < sizeof r->uuid; i++)
        __atomic_store_n(&r->uuid[i], st->uuid[dev][i], __ATOMIC_RELAXED);
    for (size_t i = 0; i < sizeof r->pci_bus_id; i++)
        __atomic_store_n(&r->pci_bus_id[i], st->pci_bus_id[dev][i], __ATOMIC_RELAXED);
    __atomic_store_n(&r->seq, seq + 2, __ATOMIC_RELEASE);
}

/* Snapshot the source into the segment. Caller holds g_pub_lock and has checked the gen. */
static void publish_locked(writer_state *st)
{
    int count = st->src.device_count ? st->src.device_count(st->src.ctx) : 0;
    if (count < 0)
        count = 0;
    /* The header is in memory other processes of this user may write: never an address or a
     * bound from it. */
    if ((unsigned)count > CA_STATS_DEVICE_CAPACITY)
        count = (int)CA_STATS_DEVICE_CAPACITY;
    unsigned used = __atomic_load_n(&st->hdr->device_used, __ATOMIC_RELAXED);
    for (int dev = 0; dev < count; dev++) {
        ca_dev_stats s;
        memset(&s, 0, sizeof s);
        int in_use = st->src.read_device && st->src.read_device(st->src.ctx, dev, &s) != 0;
        if (!in_use)
            memset(&s, 0, sizeof s);
        __atomic_store_n(&st->in_use[dev], (unsigned char)in_use, __ATOMIC_RELAXED);
        record_extra x = {0, 0, __atomic_load_n(&st->given[dev], __ATOMIC_RELAXED)};
        if (in_use) {
            x.mem_total = __atomic_load_n(&st->mem_total[dev], __ATOMIC_RELAXED);
            x.mem_free = __atomic_load_n(&st->mem_free[dev], __ATOMIC_RELAXED);
        }
        write_record(record_at(st->hdr, (unsigned)dev), (uint32_t)dev, &s, in_use, &x);
        write_ident(st, dev);
    }
    ca_dev_stats host;
    memset(&host, 0, sizeof host);
    int host_in_use = st->src.read_host && st->src.read_host(st->src.ctx, &host) != 0;
    if (!host_in_use)
        memset(&host, 0, sizeof host);
    static const record_extra none;
    write_record(record_at(st->hdr, CA_STATS_DEVICE_CAPACITY), CA_STATS_HOST_DEVICE, &host,
                 host_in_use, &none);
    /* device_used only grows: a reader never loses sight of a device it has seen. */
    if ((unsigned)count > used)
        __atomic_store_n(&st->hdr->device_used, (uint32_t)count, __ATOMIC_RELEASE);
    __atomic_fetch_add(&st->hdr->publish_count, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&st->hdr->heartbeat_ns, ca_now_ns(), __ATOMIC_RELEASE);
}

/* Publish unless the segment was stopped meanwhile. */
static void publish_if_current(writer_state *st)
{
    pthread_mutex_lock(&g_pub_lock);
    if (current_gen() == st->gen)
        publish_locked(st);
    pthread_mutex_unlock(&g_pub_lock);
}

/* A neighbour's request, served device by device so that each record counts what it gave:
 * every device the source has now, or the one asked for. Not only those the last snapshot saw
 * in use: a program may take a device, fill it and free it all within one round. */
static uint64_t reclaim_for_neighbour(writer_state *st, int want)
{
    uint64_t total = 0;
    int count = st->src.device_count ? st->src.device_count(st->src.ctx) : 0;
    if (count > (int)CA_STATS_DEVICE_CAPACITY)
        count = (int)CA_STATS_DEVICE_CAPACITY;
    for (int dev = 0; dev < count; dev++) {
        if (want >= 0 && dev != want)
            continue;
        uint64_t bytes = st->src.reclaim(st->src.ctx, dev);
        if (bytes == CA_STATS_RECLAIM_LATER)
            return total ? total : CA_STATS_RECLAIM_LATER; /* a capture began meanwhile */
        __atomic_fetch_add(&st->given[dev], bytes, __ATOMIC_RELAXED);
        total += bytes;
    }
    return total;
}

enum { SERVED = 1, LATER = 2 }; /* serve_reclaim's answers besides 0 (stopped) */

static struct timespec until(uint64_t deadline, uint64_t now)
{
    uint64_t left = deadline > now ? deadline - now : 0;
    return (struct timespec){(time_t)(left / 1000000000u), (long)(left % 1000000000u)};
}

/* The CPU time this thread has used: what a reclaim cost the process, whatever else the
 * machine runs meanwhile (a driver's waits for the device spin, and count). */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t deadline)
{
    struct timespec ts = until(deadline, ca_now_ns());
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Serve a pending reclaim request, if any, once its turn came (RECLAIM_GAP_*): SERVED (or
 * none pending), LATER (a capture holds it back), 0 when the segment was stopped. */
static int serve_reclaim(writer_state *st)
{
    uint64_t req, seq;
    for (;;) {
        pthread_mutex_lock(&g_rec_lock);
        if (current_gen() != st->gen) {
            pthread_mutex_unlock(&g_rec_lock);
            return 0;
        }
        req = __atomic_load_n(&st->hdr->reclaim_request, __ATOMIC_ACQUIRE);
        seq = CA_STATS_RECLAIM_SEQ(req);
        if (seq == __atomic_load_n(&st->hdr->reclaim_done, __ATOMIC_RELAXED) ||
            ca_now_ns() >= st->next_reclaim_ns)
            break;
        /* Not yet: wait with no lock held, so that a stop is not kept waiting. */
        pthread_mutex_unlock(&g_rec_lock);
        sleep_until(st->next_reclaim_ns);
    }
    if (seq != __atomic_load_n(&st->hdr->reclaim_done, __ATOMIC_RELAXED)) {
        int dev = CA_STATS_RECLAIM_DEV(req);
        uint64_t t0 = thread_cpu_ns();
        uint64_t bytes = !st->src.reclaim                        ? 0
                         : CA_STATS_RECLAIM_FROM_NEIGHBOUR(req) ? reclaim_for_neighbour(st, dev)
                                                                : st->src.reclaim(st->src.ctx, dev);
        if (bytes == CA_STATS_RECLAIM_LATER) {
            pthread_mutex_unlock(&g_rec_lock);
            return LATER;
        }
        uint64_t gap = (thread_cpu_ns() - t0) * RECLAIM_GAP_FACTOR;
        gap = gap < RECLAIM_GAP_MIN_NS ? RECLAIM_GAP_MIN_NS
              : gap > RECLAIM_GAP_MAX_NS ? RECLAIM_GAP_MAX_NS
                                         : gap;
        st->next_reclaim_ns = ca_now_ns() + gap;
        /* Publish first, so a reader that sees the answer also sees the lower numbers. */
        publish_if_current(st);
        __atomic_store_n(&st->hdr->reclaim_bytes, bytes, __ATOMIC_RELAXED);
        __atomic_store_n(&st->hdr->reclaim_done, seq, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_rec_lock);
    return SERVED;
}

/* Sleep until deadline (CLOCK_MONOTONIC ns) unless a reclaim request is or becomes pending:
 * 1 when one is, 0 at the deadline or when the segment was stopped. The request word's low
 * half is a shared futex, so that a neighbour short of memory is answered at once rather
 * than at the next round. */
static int wait_for_request(writer_state *st, uint64_t deadline)
{
    for (;;) {
        uint64_t now = ca_now_ns();
        if (now >= deadline)
            return 0;
        pthread_mutex_lock(&g_rec_lock);
        if (current_gen() != st->gen) {
            pthread_mutex_unlock(&g_rec_lock);
            return 0;
        }
        uint32_t *word = (uint32_t *)&st->hdr->reclaim_request; /* low half: little-endian */
        uint64_t req = __atomic_load_n(&st->hdr->reclaim_request, __ATOMIC_ACQUIRE);
        uint64_t done = __atomic_load_n(&st->hdr->reclaim_done, __ATOMIC_ACQUIRE);
        pthread_mutex_unlock(&g_rec_lock);
        if (CA_STATS_RECLAIM_SEQ(req) != done)
            return 1;
        /* After a stop the address may be unmapped: the call then fails (EFAULT) or waits out
         * its timeout, and the next round sees the new generation. */
        struct timespec ts = until(deadline, now);
        syscall(SYS_futex, word, FUTEX_WAIT, (uint32_t)req, &ts, NULL, 0);
    }
}

/* Until the next round: serve what neighbours and readers ask as it comes; a request that a
 * capture holds back waits for the round. Returns 0 when the segment was stopped. */
static int serve_until(writer_state *st, uint64_t deadline)
{
    while (wait_for_request(st, deadline)) {
        int rc = serve_reclaim(st);
        if (rc == 0)
            return 0;
        if (rc == LATER) {
            sleep_until(deadline);
            break;
        }
    }
    return current_gen() == st->gen;
}

/* Ask the source for the names of the devices in use it has not named yet. Under rec_lock. */
static void identify_devices(writer_state *st)
{
    for (unsigned dev = 0; st->src.identify && dev < CA_STATS_DEVICE_CAPACITY; dev++) {
        if (!__atomic_load_n(&st->in_use[dev], __ATOMIC_RELAXED) ||
            __atomic_load_n(&st->known[dev], __ATOMIC_RELAXED))
            continue;
        char uuid[CA_STATS_UUID_LEN] = "", pci[CA_STATS_PCI_LEN] = "";
        /* Asked once: a driver that cannot name the device leaves its names empty. */
        if (st->src.identify(st->src.ctx, (int)dev, uuid, pci) != 0)
            uuid[0] = pci[0] = '\0';
        uuid[sizeof uuid - 1] = '\0';
        pci[sizeof pci - 1] = '\0';
        memcpy(st->uuid[dev], uuid, sizeof uuid);
        memcpy(st->pci_bus_id[dev], pci, sizeof pci);
        __atomic_store_n(&st->known[dev], 1, __ATOMIC_RELEASE);
    }
}

/* Ask the device for its memory, for every device the last snapshot saw in use. A failed
 * question publishes 0 (unknown) rather than an old answer. Returns 0 when the segment was
 * stopped. */
static int refresh_mem(writer_state *st)
{
    if (st->src.mem_info == NULL && st->src.identify == NULL)
        return 1;
    pthread_mutex_lock(&g_rec_lock);
    if (current_gen() != st->gen) {
        pthread_mutex_unlock(&g_rec_lock);
        return 0;
    }
    for (unsigned dev = 0; st->src.mem_info && dev < CA_STATS_DEVICE_CAPACITY; dev++) {
        if (!__atomic_load_n(&st->in_use[dev], __ATOMIC_RELAXED))
            continue;
        uint64_t free_b = 0, total_b = 0;
        if (st->src.mem_info(st->src.ctx, (int)dev, &free_b, &total_b) != 0 || free_b > total_b)
            free_b = total_b = 0;
        __atomic_store_n(&st->mem_total[dev], total_b, __ATOMIC_RELAXED);
        __atomic_store_n(&st->mem_free[dev], free_b, __ATOMIC_RELAXED);
    }
    identify_devices(st);
    pthread_mutex_unlock(&g_rec_lock);
    return 1;
}

/* The source's periodic work, which may reach the device: under rec_lock, as a reclaim. */
static int run_tick(writer_state *st)
{
    if (st->src.tick == NULL)
        return 1;
    pthread_mutex_lock(&g_rec_lock);
    int current = current_gen() == st->gen;
    if (current)
        st->src.tick(st->src.ctx);
    pthread_mutex_unlock(&g_rec_lock);
    return current;
}

static void *monitor_main(void *arg)
{
    writer_state *st = arg;
    for (;;) {
        if (!serve_until(st, ca_now_ns() + MONITOR_PERIOD_NS))
            break;
        if (current_gen() != st->gen || !refresh_mem(st))
            break;
        if (!run_tick(st))
            break;
        publish_if_current(st);
        if (!serve_reclaim(st))
            break;
    }
    /* The state is freed here, never by stop: the thread may still hold it. The mapping is
     * unmapped by stop only when this thread was not inside a reclaim. */
    free(st);
    return NULL;
}

/* The thread must not take signals meant for the program, nor keep it alive (detached). */
static int start_monitor(writer_state *st)
{
    sigset_t all, old;
    pthread_attr_t attr;
    pthread_t tid;
    sigfillset(&all);
    if (pthread_attr_init(&attr) != 0)
        return -1;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&tid, &attr, monitor_main, st);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}

static void stats_atexit(void) { ca_stats_stop(); }

int ca_stats_start(const ca_stats_source *src, const char *api, const char *config_summary)
{
    if (!src)
        return -1;
    pthread_mutex_lock(&g_lock);
    if (g_state || g_failed) {
        int rc = g_state ? 0 : -1;
        pthread_mutex_unlock(&g_lock);
        return rc;
    }
    size_t size = sizeof(ca_stats_header) +
                  (2 * CA_STATS_DEVICE_CAPACITY + CA_STATS_HOST_RECORDS) * sizeof(ca_stats_record);
    writer_state *st = calloc(1, sizeof *st);
    int fd = st ? create_segment() : -1;
    int err = fd < 0 ? errno : 0;
    void *map = MAP_FAILED;
    if (fd >= 0) {
        if (fchmod(fd, 0600) == 0 && ftruncate(fd, (off_t)size) == 0)
            map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        err = map == MAP_FAILED ? errno : 0;
        close(fd);
        if (map == MAP_FAILED)
            remove_segment();
    }
    if (map == MAP_FAILED) {
        /* Once per process: the program runs on, served, without statistics. */
        fprintf(stderr, "cachealloc: cannot create the statistics segment %s (%s); running "
                        "without statistics (CACHEALLOC_STATS=0 silences this)\n",
                g_path[0] ? g_path : "(no name)", strerror(err ? err : ENOMEM));
        free(st);
        g_failed = 1;
        pthread_mutex_unlock(&g_lock);
        return -1;
    }
    ca_stats_header *h = map;
    h->abi_version = CA_STATS_ABI_VERSION;
    h->header_size = sizeof *h;
    h->record_size = sizeof(ca_stats_record);
    h->device_capacity = CA_STATS_DEVICE_CAPACITY;
    h->host_records = CA_STATS_HOST_RECORDS;
    h->ident_records = CA_STATS_DEVICE_CAPACITY;
    h->uid = (uint32_t)geteuid();
    h->pid = (uint64_t)getpid();
    h->start_time = ca_stats_proc_start_time(0);
    copy_str(h->api, sizeof h->api, api);
    copy_str(h->config, sizeof h->config, config_summary);
    read_cmdline(h->cmdline, sizeof h->cmdline);

    st->src = *src;
    st->hdr = h;
    st->size = size;
    st->gen = current_gen();
    g_state = st;
    pthread_mutex_lock(&g_pub_lock);
    publish_locked(st);
    pthread_mutex_unlock(&g_pub_lock);
    /* Readers ignore a segment until the magic is there: store it last. */
    __atomic_store_n(&h->magic, CA_STATS_MAGIC, __ATOMIC_RELEASE);

    if (!g_atexit_done) {
        g_atexit_done = 1;
        atexit(stats_atexit);
        at_quick_exit(stats_atexit); /* a program leaving by quick_exit leaves no segment */
    }
    /* Without a thread the segment stays (ca_stats_publish still works); st is then never
     * freed, a few bytes once. */
    (void)start_monitor(st);
    pthread_mutex_unlock(&g_lock);
    return 0;
}

void ca_stats_publish(void)
{
    pthread_mutex_lock(&g_pub_lock);
    writer_state *st = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
    if (st && current_gen() == st->gen)
        publish_locked(st);
    pthread_mutex_unlock(&g_pub_lock);
}

void ca_stats_stop(void)
{
    pthread_mutex_lock(&g_lock);
    writer_state *st = g_state;
    if (!st) {
        pthread_mutex_unlock(&g_lock);
        return;
    }
    ca_stats_header *h = st->hdr;
    size_t size = st->size;
    pthread_mutex_lock(&g_pub_lock);
    __atomic_store_n(&g_state, NULL, __ATOMIC_RELEASE);
    __atomic_fetch_add(&g_gen, 1, __ATOMIC_RELEASE);
    /* Nothing more will be served: a neighbour waiting for an answer stops waiting (a beat of
     * 0 says the writer stopped), rather than wait out its bound. */
    __atomic_store_n(&h->heartbeat_ns, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&g_pub_lock);
    remove_segment();

    /* A reclaim in flight may still write the answer (and a device memory question still
     * be inside the source): wait for it a little, and if it does not finish, leave the
     * mapping in place rather than pull it from under the thread. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += STOP_WAIT_S;
    if (pthread_mutex_timedlock(&g_rec_lock, &until) == 0) {
        munmap(h, size);
        pthread_mutex_unlock(&g_rec_lock);
    }
    pthread_mutex_unlock(&g_lock);
}

void ca_stats_forget_after_fork(void)
{
    /* The child has no monitor thread and must never write the parent's segment. A lock
     * held by a parent thread at fork stays locked forever in the child: start afresh. */
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_lock = fresh;
    g_pub_lock = fresh;
    g_rec_lock = fresh;
    if (g_state)
        munmap(g_state->hdr, g_state->size); /* the child's own mapping only */
    g_state = NULL; /* the parent's thread state is not ours: leak it, never free it */
    g_failed = 0;
    __atomic_fetch_add(&g_gen, 1, __ATOMIC_RELEASE);
}
