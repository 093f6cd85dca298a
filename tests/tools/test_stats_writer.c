/* The writer against a fake source, read back with cachealloc-top's own reader. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "stats/neighbours.h"
#include "reclaim.h"
#include "seg_scan.h"
#include "stats/writer.h"

/* The fake source: every field of device d derives from one counter k, so a torn read shows
 * as fields that disagree. */
static uint64_t g_k = 1;             /* atomic */
static uint64_t g_cached = 4096;     /* atomic; reclaim zeroes it */
static int g_reclaim_calls;          /* atomic */
static int g_dev0_unused;            /* atomic; device 0 reads as never used */

static int src_count(void *ctx)
{
    (void)ctx;
    return 2;
}

static int src_read(void *ctx, int dev, ca_dev_stats *o)
{
    (void)ctx;
    if (dev == 1 || (dev == 0 && __atomic_load_n(&g_dev0_unused, __ATOMIC_ACQUIRE)))
        return 0; /* a slot never used */
    uint64_t k = __atomic_load_n(&g_k, __ATOMIC_ACQUIRE);
    uint64_t cached = __atomic_load_n(&g_cached, __ATOMIC_ACQUIRE);
    memset(o, 0, sizeof *o);
    o->allocated_bytes = k * 1000;
    o->pending_bytes = k * 10;
    o->cached_bytes = cached;
    o->reserved_bytes = o->allocated_bytes + o->pending_bytes + cached;
    o->alloc_calls = k;
    o->free_calls = k;
    o->cache_hits = k;
    o->segments = k;
    o->largest_free_block = cached;
    o->sync_wait_ns = k * 7;
    o->fence_wait_ns = k * 5;
    o->fence_waits = k;
    o->grow_ns = k * 3;
    o->growths = k;
    return 1;
}

static uint64_t g_reclaim_cpu_ns;    /* atomic; CPU time each reclaim spends */
static long g_reclaim_sleep_ms;      /* atomic; and time it waits (for the device, say) */

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t src_reclaim(void *ctx, int dev)
{
    (void)ctx;
    (void)dev;
    __atomic_fetch_add(&g_reclaim_calls, 1, __ATOMIC_RELAXED);
    uint64_t spend = __atomic_load_n(&g_reclaim_cpu_ns, __ATOMIC_ACQUIRE);
    for (uint64_t t0 = thread_cpu_ns(); thread_cpu_ns() - t0 < spend;) {
    }
    long ms = __atomic_load_n(&g_reclaim_sleep_ms, __ATOMIC_ACQUIRE);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    return __atomic_exchange_n(&g_cached, 0, __ATOMIC_ACQ_REL);
}

/* The device memory question: 8 GiB total, free falling with k; it notes any call from a
 * thread other than the monitor's (the test's own thread) and any for an unused device. */
static pthread_t g_main;
static int g_mem_calls, g_mem_on_main, g_mem_bad_dev; /* atomic */
static int g_mem_fail;                                /* atomic */

static int src_mem(void *ctx, int dev, uint64_t *free_bytes, uint64_t *total_bytes)
{
    (void)ctx;
    __atomic_fetch_add(&g_mem_calls, 1, __ATOMIC_RELAXED);
    if (pthread_equal(pthread_self(), g_main))
        __atomic_fetch_add(&g_mem_on_main, 1, __ATOMIC_RELAXED);
    if (dev != 0)
        __atomic_fetch_add(&g_mem_bad_dev, 1, __ATOMIC_RELAXED);
    if (__atomic_load_n(&g_mem_fail, __ATOMIC_ACQUIRE))
        return -1;
    *total_bytes = UINT64_C(8) << 30;
    *free_bytes = (UINT64_C(3) << 30) - __atomic_load_n(&g_k, __ATOMIC_ACQUIRE);
    return 0;
}

/* Pinned host memory: none until g_host is set, then a pool whose numbers derive from it. */
static uint64_t g_host; /* atomic */

static int src_host(void *ctx, ca_dev_stats *o)
{
    (void)ctx;
    uint64_t h = __atomic_load_n(&g_host, __ATOMIC_ACQUIRE);
    if (!h)
        return 0;
    memset(o, 0, sizeof *o);
    o->allocated_bytes = h;
    o->cached_bytes = 2 * h;
    o->reserved_bytes = 3 * h;
    o->alloc_calls = 7;
    return 1;
}

/* Device 0's names; it counts the questions (the monitor thread asks once). */
static int g_identify_calls; /* atomic */

static int src_identify(void *ctx, int dev, char uuid[CA_STATS_UUID_LEN],
                        char pci[CA_STATS_PCI_LEN])
{
    (void)ctx;
    __atomic_fetch_add(&g_identify_calls, 1, __ATOMIC_RELAXED);
    snprintf(uuid, CA_STATS_UUID_LEN, "GPU-00000000-0000-0000-0000-00000000000%d", dev);
    snprintf(pci, CA_STATS_PCI_LEN, "00000000:%02X:00.0", 0x17 + dev);
    return 0;
}

static const ca_stats_source g_src = {NULL, src_count, src_read, src_reclaim, src_mem, NULL,
                                      src_host, src_identify};
static char g_dir[] = "/tmp/ca-stats-test.XXXXXX";

static void seg_name(int pid, char *buf, size_t len)
{
    snprintf(buf, len, CA_STATS_NAME_PREFIX "%u.%d", (unsigned)geteuid(), pid);
}

static void seg_path(int pid, char *buf, size_t len)
{
    char name[64];
    seg_name(pid, name, sizeof name);
    snprintf(buf, len, "%s/%s", g_dir, name);
}

static int read_pid(int pid, top_proc *p)
{
    char name[64], why[160];
    seg_name(pid, name, sizeof name);
    int dfd = open(g_dir, O_RDONLY | O_DIRECTORY);
    int rc = top_read_segment(dfd, name, p, why, sizeof why);
    close(dfd);
    if (rc != 0)
        fprintf(stderr, "read: %s\n", why);
    return rc;
}

static int read_self(top_proc *p) { return read_pid((int)getpid(), p); }

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int group_setup(void **state)
{
    (void)state;
    g_main = pthread_self();
    if (!mkdtemp(g_dir))
        return -1;
    setenv(CA_STATS_DIR_ENV, g_dir, 1);
    return ca_stats_start(&g_src, "cuda", "pool=split limit=6G");
}

static int group_teardown(void **state)
{
    (void)state;
    ca_stats_stop();
    char path[4096];
    DIR *d = opendir(g_dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", g_dir, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    rmdir(g_dir);
    return 0;
}

static void test_segment_created_private(void **state)
{
    (void)state;
    char path[4096];
    struct stat st;
    seg_path((int)getpid(), path, sizeof path);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_uid, geteuid());
    /* idempotent: a second start keeps the same segment */
    assert_int_equal(ca_stats_start(&g_src, "hip", "other"), 0);
    top_proc p;
    assert_int_equal(read_self(&p), 0);
    assert_string_equal(p.api, "cuda");
    top_proc_clear(&p);
}

static void test_header_fields(void **state)
{
    (void)state;
    top_proc p;
    assert_int_equal(read_self(&p), 0);
    assert_int_equal(p.pid, getpid());
    assert_int_equal(p.uid, geteuid());
    assert_string_equal(p.config, "pool=split limit=6G");
    assert_non_null(strstr(p.cmdline, "test_stats_writer"));
    assert_true(p.start_time > 0);
    assert_true(top_pid_alive(p.pid, p.start_time));
    assert_false(top_pid_alive(p.pid, p.start_time + 1)); /* a reused pid */
    top_proc_clear(&p);
}

static void test_fields_published(void **state)
{
    (void)state;
    __atomic_store_n(&g_k, 42, __ATOMIC_RELEASE);
    ca_stats_publish();
    top_proc p;
    assert_int_equal(read_self(&p), 0);
    assert_int_equal(p.ndev, 1); /* device 1 is unused */
    assert_int_equal(p.dev[0].device, 0);
    assert_int_equal(p.dev[0].v.allocated_bytes, 42000);
    assert_int_equal(p.dev[0].v.pending_bytes, 420);
    assert_int_equal(p.dev[0].v.alloc_calls, 42);
    assert_int_equal(p.dev[0].v.reserved_bytes, 42000 + 420 + g_cached);
    /* the time the cache's waits cost: the words version 5 appended to the record */
    assert_true(p.dev[0].has_waits);
    assert_int_equal(p.dev[0].w.sync_wait_ns, 42 * 7);
    assert_int_equal(p.dev[0].w.fence_wait_ns, 42 * 5);
    assert_int_equal(p.dev[0].w.fence_waits, 42);
    assert_int_equal(p.dev[0].w.grow_ns, 42 * 3);
    assert_int_equal(p.dev[0].w.growths, 42);
    top_proc_clear(&p);
}

/* The host record follows the device records, is read only once the pool exists, and is
 * never counted as a device. */
static void test_host_pool_published(void **state)
{
    (void)state;
    top_proc p;
    ca_stats_publish();
    assert_int_equal(read_self(&p), 0);
    assert_false(p.has_host);
    top_proc_clear(&p);
    __atomic_store_n(&g_host, 4096, __ATOMIC_RELEASE);
    ca_stats_publish();
    assert_int_equal(read_self(&p), 0);
    assert_true(p.has_host);
    assert_int_equal(p.host.device, CA_STATS_HOST_DEVICE);
    assert_int_equal(p.host.v.allocated_bytes, 4096);
    assert_int_equal(p.host.v.cached_bytes, 8192);
    assert_int_equal(p.host.v.reserved_bytes, 3 * 4096);
    assert_int_equal(p.host.v.alloc_calls, 7);
    assert_int_equal(p.ndev, 1);
    assert_int_equal(p.dev[0].device, 0);
    assert_int_equal(p.abi_version, CA_STATS_ABI_VERSION);
    top_proc_clear(&p);
    __atomic_store_n(&g_host, 0, __ATOMIC_RELEASE);
    ca_stats_publish();
}

/* The monitor thread names each device in use once; every snapshot then carries the names. */
static void test_device_names_published(void **state)
{
    (void)state;
    top_proc p;
    for (int i = 0; i < 100; i++) {
        assert_int_equal(read_self(&p), 0);
        int named = p.ndev == 1 && p.dev[0].uuid[0];
        if (named)
            break;
        top_proc_clear(&p);
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(p.ndev, 1);
    assert_string_equal(p.dev[0].uuid, "GPU-00000000-0000-0000-0000-000000000000");
    assert_string_equal(p.dev[0].pci_bus_id, "00000000:17:00.0");
    top_proc_clear(&p);
    struct timespec ts = {0, 600000000}; /* two more rounds */
    nanosleep(&ts, NULL);
    assert_int_equal(__atomic_load_n(&g_identify_calls, __ATOMIC_RELAXED), 1);
}

static void test_monitor_publishes_and_beats(void **state)
{
    (void)state;
    top_proc a, b;
    assert_int_equal(read_self(&a), 0);
    __atomic_store_n(&g_k, 77, __ATOMIC_RELEASE);
    int seen = 0;
    for (int i = 0; i < 100 && !seen; i++) { /* up to 5 s; the monitor runs every 250 ms */
        sleep_ms(50);
        assert_int_equal(read_self(&b), 0);
        seen = b.ndev == 1 && b.dev[0].v.alloc_calls == 77 && b.heartbeat_ns > a.heartbeat_ns;
        top_proc_clear(&b);
    }
    top_proc_clear(&a);
    assert_true(seen);
}

/* The device's memory is asked for by the monitor thread alone, for used devices only, and
 * published with every snapshot; a failed question publishes "unknown" (0), not old numbers. */
static void test_device_memory_from_monitor_only(void **state)
{
    (void)state;
    __atomic_store_n(&g_k, 5, __ATOMIC_RELEASE);
    int seen = 0;
    for (int i = 0; i < 100 && !seen; i++) {
        ca_stats_publish(); /* the program's own thread publishing: never asks the device */
        sleep_ms(50);
        top_proc p;
        assert_int_equal(read_self(&p), 0);
        seen = p.abi_version == CA_STATS_ABI_VERSION && p.ndev == 1 && p.dev[0].has_mem &&
               p.dev[0].mem_total == UINT64_C(8) << 30 &&
               p.dev[0].mem_free == (UINT64_C(3) << 30) - 5;
        top_proc_clear(&p);
    }
    assert_true(seen);
    assert_true(__atomic_load_n(&g_mem_calls, __ATOMIC_RELAXED) > 0);
    assert_int_equal(__atomic_load_n(&g_mem_on_main, __ATOMIC_RELAXED), 0);
    assert_int_equal(__atomic_load_n(&g_mem_bad_dev, __ATOMIC_RELAXED), 0);
    __atomic_store_n(&g_mem_fail, 1, __ATOMIC_RELEASE);
    int unknown = 0;
    for (int i = 0; i < 100 && !unknown; i++) {
        sleep_ms(50);
        top_proc p;
        assert_int_equal(read_self(&p), 0);
        unknown = p.ndev == 1 && !p.dev[0].has_mem && p.dev[0].mem_total == 0;
        top_proc_clear(&p);
    }
    __atomic_store_n(&g_mem_fail, 0, __ATOMIC_RELEASE);
    assert_true(unknown);
}

static atomic_int g_hammer_stop;

static void *hammer(void *arg)
{
    (void)arg;
    /* A pause between writes: a writer that never pauses can keep a reader on the other CPU
     * from ever seeing a settled record (its reads are system calls, slower than a write). */
    struct timespec pause = {0, 1000};
    while (!atomic_load(&g_hammer_stop)) {
        __atomic_fetch_add(&g_k, 1, __ATOMIC_ACQ_REL);
        ca_stats_publish();
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void test_seqlock_consistency(void **state)
{
    (void)state;
    pthread_t t;
    atomic_store(&g_hammer_stop, 0);
    assert_int_equal(pthread_create(&t, NULL, hammer, NULL), 0);
    int checked = 0;
    uint64_t first = 0, last = 0;
    for (int i = 0; i < 10000; i++) {
        top_proc p;
        assert_int_equal(read_self(&p), 0);
        if (p.ndev == 1) {
            const ca_stats_values *v = &p.dev[0].v;
            uint64_t k = v->alloc_calls;
            assert_int_equal(v->free_calls, k);
            assert_int_equal(v->cache_hits, k);
            assert_int_equal(v->segments, k);
            assert_int_equal(v->allocated_bytes, k * 1000);
            assert_int_equal(v->pending_bytes, k * 10);
            assert_int_equal(p.dev[0].w.sync_wait_ns, k * 7);
            assert_int_equal(p.dev[0].w.growths, k);
            assert_int_equal(v->reserved_bytes,
                             v->allocated_bytes + v->pending_bytes + v->cached_bytes);
            if (!first)
                first = k;
            last = k;
            checked++;
        }
        top_proc_clear(&p);
    }
    atomic_store(&g_hammer_stop, 1);
    pthread_join(t, NULL);
    assert_true(checked > 9000);
    assert_true(last > first); /* the writer really was writing meanwhile */
}

/* A record whose seqlock word stays odd (a writer that died inside it) is never trusted:
 * the reader gives up on it and reports the process without that device. */
static void test_reader_skips_record_left_odd(void **state)
{
    (void)state;
    ca_stats_publish();
    char src[4096], dst[4096], name[64];
    int other = (int)getppid();
    seg_path((int)getpid(), src, sizeof src);
    seg_path(other, dst, sizeof dst);
    int in = open(src, O_RDONLY);
    assert_true(in >= 0);
    static unsigned char buf[1 << 16];
    ssize_t n = read(in, buf, sizeof buf);
    close(in);
    assert_true(n > (ssize_t)sizeof(ca_stats_header));
    ca_stats_header *h = (ca_stats_header *)buf;
    h->pid = (uint64_t)other;
    ca_stats_record *r = (ca_stats_record *)(buf + sizeof *h);
    r[0].seq |= 1u;
    int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(out >= 0);
    assert_int_equal(write(out, buf, (size_t)n), n);
    close(out);

    top_proc p;
    char why[160];
    seg_name(other, name, sizeof name);
    int dfd = open(g_dir, O_RDONLY | O_DIRECTORY);
    assert_int_equal(top_read_segment(dfd, name, &p, why, sizeof why), 0);
    close(dfd);
    assert_int_equal(p.pid, other);
    assert_int_equal(p.ndev, 0);
    assert_int_equal(p.nbusy, 1);
    top_proc_clear(&p);
    unlink(dst);
}

static void test_reclaim_served_by_monitor(void **state)
{
    (void)state;
    __atomic_store_n(&g_cached, 1 << 20, __ATOMIC_RELEASE);
    ca_stats_publish();
    int calls = __atomic_load_n(&g_reclaim_calls, __ATOMIC_RELAXED);
    top_reclaim r;
    char why[160];
    assert_int_equal(top_reclaim_send(g_dir, (int)getpid(), -1, &r, why, sizeof why), 0);
    uint64_t bytes = 0;
    int rc = 0;
    /* This thread only sleeps: the answer must come from the monitor thread, within ~1 s;
     * 5 s allowed for a loaded machine. */
    for (int i = 0; i < 100 && rc == 0; i++) {
        sleep_ms(50);
        rc = top_reclaim_poll(&r, &bytes);
    }
    top_reclaim_close(&r);
    assert_int_equal(rc, 1);
    assert_int_equal(bytes, 1 << 20);
    assert_int_equal(__atomic_load_n(&g_reclaim_calls, __ATOMIC_RELAXED), calls + 1);
    top_proc p; /* the answer comes after the lower numbers were published */
    assert_int_equal(read_self(&p), 0);
    assert_int_equal(p.dev[0].v.cached_bytes, 0);
    top_proc_clear(&p);
}

/* Requests posted in a tight loop into this process's own segment for ms milliseconds, each
 * as soon as the last was answered: how many were answered, each by a reclaim of its own. */
static int post_for(long ms)
{
    char path[4096];
    seg_path((int)getpid(), path, sizeof path);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    ca_stats_header *h = mmap(NULL, sizeof *h, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    assert_true(h != MAP_FAILED);
    int answers = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long el = 0; el < ms; answers++) {
        uint64_t seq = ca_stats_reclaim_post(h, -1, CA_STATS_RECLAIM_NEIGHBOUR);
        /* Answered within 500 ms, and then some for a loaded machine. */
        for (int i = 0; i < 7000 && __atomic_load_n(&h->reclaim_done, __ATOMIC_ACQUIRE) < seq; i++)
            usleep(100);
        assert_true(__atomic_load_n(&h->reclaim_done, __ATOMIC_ACQUIRE) >= seq);
        clock_gettime(CLOCK_MONOTONIC, &t);
        el = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
    }
    munmap(h, sizeof *h);
    return answers;
}

/* Whoever asks, in whatever loop, a process makes at most one reclaim every 10 ms, and one
 * every 50 times the CPU time the last one took: at 2 ms of CPU each (two devices of 1 ms),
 * one every 100 ms. Every request is still answered, none later than 500 ms (half of what a
 * neighbour waits). */
static void test_reclaims_rate_limited(void **state)
{
    (void)state;
    int cheap = post_for(1000);
    assert_true(cheap >= 2);
    assert_true(cheap <= 101);
    __atomic_store_n(&g_reclaim_cpu_ns, 1000000, __ATOMIC_RELEASE);
    int costly = post_for(1000);
    __atomic_store_n(&g_reclaim_cpu_ns, 0, __ATOMIC_RELEASE);
    assert_true(costly >= 2);
    assert_true(costly <= 12);
    print_message("reclaims in 1 s of requests: %d at no cost, %d at 1 ms of CPU each\n", cheap,
                  costly);
}

/* A neighbour: a forked child with its own segment of api whose cache holds 3 MiB free, on a
 * device it took and freed after its first snapshot (its segment says it has none until the
 * monitor's next round). It tells the parent through *ready that it is there, and lives until
 * *hold is closed. */
static pid_t start_neighbour(const char *api, int *ready, int *hold)
{
    int up[2], down[2];
    assert_int_equal(pipe(up), 0);
    assert_int_equal(pipe(down), 0);
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(up[0]);
        close(down[1]);
        ca_stats_forget_after_fork();
        __atomic_store_n(&g_cached, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&g_k, 0, __ATOMIC_RELEASE); /* nothing pending either */
        __atomic_store_n(&g_dev0_unused, 1, __ATOMIC_RELEASE);
        char c = ca_stats_start(&g_src, api, "neighbour") == 0 ? 'y' : 'n';
        __atomic_store_n(&g_dev0_unused, 0, __ATOMIC_RELEASE);
        __atomic_store_n(&g_cached, 3 << 20, __ATOMIC_RELEASE);
        if (write(up[1], &c, 1) != 1 || read(down[0], &c, 1) < 0)
            _exit(3);
        exit(0);
    }
    close(up[1]);
    close(down[0]);
    *ready = up[0];
    *hold = down[1];
    char c = 0;
    assert_int_equal(read(up[0], &c, 1), 1);
    assert_int_equal(c, 'y');
    return child;
}

static void stop_neighbour(pid_t child, int ready, int hold)
{
    close(hold);
    close(ready);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* The last rung of the ladder: a neighbour of the same API gives back what its cache holds
 * free, device by device, and publishes it as given, even when its last snapshot is older
 * than its frees; one of another API is not asked. */
static void test_neighbour_gives_back(void **state)
{
    (void)state;
    int ready, hold, other_ready, other_hold;
    pid_t other = start_neighbour("hip", &other_ready, &other_hold);
    assert_int_equal(ca_neighbours_ask("cuda", 3000), 0); /* not ours to ask */
    pid_t child = start_neighbour("cuda", &ready, &hold);
    uint64_t mine = __atomic_load_n(&g_cached, __ATOMIC_ACQUIRE);
    assert_int_equal(ca_neighbours_ask("cuda", 3000), 3 << 20);
    assert_int_equal(__atomic_load_n(&g_cached, __ATOMIC_ACQUIRE), mine); /* never itself */
    top_proc p;
    assert_int_equal(read_pid((int)child, &p), 0);
    assert_int_equal(p.dev[0].v.cached_bytes, 0);
    assert_int_equal(p.dev[0].given, 3 << 20);
    top_proc_clear(&p);
    assert_int_equal(read_pid((int)other, &p), 0);
    assert_int_equal(p.dev[0].given, 0);
    top_proc_clear(&p);
    /* Asked again at once (a round right after a round asks anew), it holds nothing free:
     * nothing given. */
    assert_int_equal(ca_neighbours_ask("cuda", 3000), 0);
    stop_neighbour(child, ready, hold);
    stop_neighbour(other, other_ready, other_hold);
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* A neighbour stopped (SIGSTOP) for over a second is asked but not waited for; it gives back
 * what it holds once it runs again. */
static void test_stopped_neighbour_not_waited(void **state)
{
    (void)state;
    int ready, hold;
    pid_t child = start_neighbour("cuda", &ready, &hold);
    assert_int_equal(kill(child, SIGSTOP), 0);
    sleep_ms(1300); /* its monitor has not beaten for over a second */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(ca_neighbours_ask("cuda", 3000), 0);
    long waited = ms_since(&t0);
    assert_int_equal(kill(child, SIGCONT), 0);
    print_message("a round with a stopped neighbour: %ld ms\n", waited);
    assert_true(waited < 1000);
    top_proc p;
    uint64_t given = 0;
    for (int i = 0; i < 100 && given == 0; i++) {
        sleep_ms(50);
        assert_int_equal(read_pid((int)child, &p), 0);
        given = p.dev[0].given;
        top_proc_clear(&p);
    }
    assert_int_equal(given, 3 << 20);
    stop_neighbour(child, ready, hold);
}

static void *close_soon(void *arg)
{
    sleep_ms(200);
    close(*(int *)arg);
    return NULL;
}

/* A neighbour that exits while its answer is under way (a reclaim of 3 s) is no longer waited
 * for once it stopped its statistics. */
static void test_exiting_neighbour_not_waited(void **state)
{
    (void)state;
    int ready, hold;
    __atomic_store_n(&g_reclaim_sleep_ms, 3000, __ATOMIC_RELEASE); /* the child's */
    pid_t child = start_neighbour("cuda", &ready, &hold);
    __atomic_store_n(&g_reclaim_sleep_ms, 0, __ATOMIC_RELEASE);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, close_soon, &hold), 0);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ca_neighbours_ask("cuda", 5000);
    long waited = ms_since(&t0);
    assert_int_equal(pthread_join(t, NULL), 0);
    print_message("a round with a neighbour exiting: %ld ms\n", waited);
    assert_true(waited < 2000); /* 200 ms, and a loaded machine's delays */
    close(ready);
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A forked child forgets the parent's segment, starts its own, and removes it at exit;
 * the parent's segment is untouched. */
static void test_fork_child_and_exit_removal(void **state)
{
    (void)state;
    fflush(NULL); /* the child exits through exit(): no buffered output twice */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        ca_stats_forget_after_fork();
        char path[4096];
        struct stat st;
        int ok = ca_stats_start(&g_src, "hip", "child") == 0;
        seg_path((int)getpid(), path, sizeof path);
        ok = ok && stat(path, &st) == 0;
        if (!ok)
            _exit(3);
        exit(0);
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    char path[4096];
    struct stat st;
    seg_path((int)child, path, sizeof path);
    assert_int_not_equal(stat(path, &st), 0); /* removed by the child's atexit */
    top_proc p;
    assert_int_equal(read_self(&p), 0);      /* the parent's is still there and valid */
    assert_string_equal(p.api, "cuda");
    top_proc_clear(&p);
}

static void test_start_fails_cleanly_without_dir(void **state)
{
    (void)state;
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        ca_stats_forget_after_fork();
        setenv(CA_STATS_DIR_ENV, "/nonexistent/cachealloc-test-dir", 1);
        int rc = ca_stats_start(&g_src, "cuda", "");
        ca_stats_publish(); /* harmless without a segment */
        ca_stats_stop();
        _exit(rc == -1 ? 0 : 3);
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* Without CACHEALLOC_SHM_DIR the segment is a POSIX shm object: /dev/shm/cachealloc.<uid>.<pid>. */
static void test_default_shm_name(void **state)
{
    (void)state;
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        ca_stats_forget_after_fork();
        unsetenv(CA_STATS_DIR_ENV);
        char path[128];
        struct stat st;
        snprintf(path, sizeof path, CA_STATS_DEFAULT_DIR "/" CA_STATS_NAME_PREFIX "%u.%d",
                 (unsigned)geteuid(), (int)getpid());
        if (ca_stats_start(&g_src, "cuda", "") != 0)
            _exit(3);
        int ok = lstat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600;
        ca_stats_stop();
        ok = ok && lstat(path, &st) != 0;
        _exit(ok ? 0 : 4);
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 3)
        skip(); /* no /dev/shm here */
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_stop_removes_and_restart(void **state)
{
    (void)state;
    char path[4096];
    struct stat st;
    seg_path((int)getpid(), path, sizeof path);
    ca_stats_stop();
    assert_int_not_equal(stat(path, &st), 0);
    ca_stats_stop(); /* idempotent */
    ca_stats_publish(); /* no segment: nothing happens */
    assert_int_equal(ca_stats_start(&g_src, "hip", "again"), 0);
    top_proc p;
    assert_int_equal(read_self(&p), 0);
    assert_string_equal(p.api, "hip");
    top_proc_clear(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segment_created_private),
        cmocka_unit_test(test_header_fields),
        cmocka_unit_test(test_fields_published),
        cmocka_unit_test(test_host_pool_published),
        cmocka_unit_test(test_device_names_published),
        cmocka_unit_test(test_monitor_publishes_and_beats),
        cmocka_unit_test(test_device_memory_from_monitor_only),
        cmocka_unit_test(test_seqlock_consistency),
        cmocka_unit_test(test_reader_skips_record_left_odd),
        cmocka_unit_test(test_reclaim_served_by_monitor),
        cmocka_unit_test(test_reclaims_rate_limited),
        cmocka_unit_test(test_fork_child_and_exit_removal),
        cmocka_unit_test(test_neighbour_gives_back),
        cmocka_unit_test(test_stopped_neighbour_not_waited),
        cmocka_unit_test(test_exiting_neighbour_not_waited),
        cmocka_unit_test(test_start_fails_cleanly_without_dir),
        cmocka_unit_test(test_default_shm_name),
        cmocka_unit_test(test_stop_removes_and_restart),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
