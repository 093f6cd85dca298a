/* The file side of the reader. Never mmap: a file truncated under a mapping raises SIGBUS.
 * Every byte is copied with pread into private memory, records re-read under their seqlock. */
#include "seg_scan.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SEQLOCK_TRIES 1000
/* What one scan may spend waiting for records to settle, all segments together: a segment
 * whose record never settles (a writer stopped inside it, or a file made to look so) must not
 * hold a scrape for long. */
#define SCAN_REREAD_BUDGET_NS 1000000000ull

static uint64_t g_reread_deadline_ns; /* 0: no budget (a single segment read) */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

const char *top_shm_dir(void)
{
    const char *d = getenv(CA_STATS_DIR_ENV);
    return (d && *d) ? d : CA_STATS_DEFAULT_DIR;
}

static int parse_decimal(const char *s, const char *end, unsigned long max, unsigned long *out)
{
    unsigned long v = 0;
    if (s == end || end - s > 10 || (*s == '0' && end - s > 1))
        return -1;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (unsigned long)(*s - '0');
    }
    if (v > max)
        return -1;
    *out = v;
    return 0;
}

int top_seg_name(const char *name, unsigned *uid, int *pid)
{
    size_t plen = strlen(CA_STATS_NAME_PREFIX);
    if (strncmp(name, CA_STATS_NAME_PREFIX, plen) != 0)
        return -1;
    const char *u = name + plen;
    const char *dot = strchr(u, '.');
    if (!dot)
        return -1;
    unsigned long uv, pv;
    if (parse_decimal(u, dot, UINT_MAX, &uv) != 0 ||
        parse_decimal(dot + 1, dot + 1 + strlen(dot + 1), INT_MAX, &pv) != 0 || pv == 0)
        return -1;
    *uid = (unsigned)uv;
    *pid = (int)pv;
    return 0;
}

static int pread_full(int fd, void *buf, size_t len, off_t off)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, off + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

/* Seqlock read of one record through the file: seq, record, seq again; each pread is a
 * syscall, so the three reads are ordered. Retry on odd or changed seq, up to tries times and
 * within the scan's budget. */
static int reread_record(int fd, unsigned char *dst, size_t off, size_t size, int tries)
{
    for (int t = 0; t < tries; t++) {
        if (t > 0 && g_reread_deadline_ns && now_ns() > g_reread_deadline_ns)
            return -1;
        uint64_t s1, s2, inner;
        if (pread_full(fd, &s1, sizeof s1, (off_t)off) != 0)
            return -1;
        if (!(s1 & 1u) && pread_full(fd, dst, size, (off_t)off) == 0 &&
            pread_full(fd, &s2, sizeof s2, (off_t)off) == 0) {
            memcpy(&inner, dst, sizeof inner);
            if (s1 == s2 && inner == s1)
                return 0;
        }
        if (t > 20) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        } else {
            sched_yield();
        }
    }
    return -1;
}

int top_read_segment(int dirfd, const char *name, top_proc *out, char *why, size_t whylen)
{
    unsigned uid;
    int pid;
    memset(out, 0, sizeof *out);
    if (top_seg_name(name, &uid, &pid) != 0) {
        snprintf(why, whylen, "not a segment name");
        return -1;
    }
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(why, whylen, "cannot open: %s", errno == ELOOP ? "a symbolic link" : strerror(errno));
        return -1;
    }
    struct stat st;
    unsigned char *buf = NULL;
    int rc = -1;
    if (fstat(fd, &st) != 0) {
        snprintf(why, whylen, "cannot stat: %s", strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "not a regular file");
    } else if (st.st_uid != uid) {
        snprintf(why, whylen, "owner uid %u differs from the uid in its name", (unsigned)st.st_uid);
    } else if (st.st_size < (off_t)sizeof(ca_stats_header)) {
        snprintf(why, whylen, "too small (%lld bytes)", (long long)st.st_size);
    } else if (st.st_size > (off_t)CA_STATS_MAX_SEGMENT) {
        snprintf(why, whylen, "too large (%lld bytes)", (long long)st.st_size);
    } else if (!(buf = malloc((size_t)st.st_size))) {
        snprintf(why, whylen, "out of memory");
    } else if (pread_full(fd, buf, (size_t)st.st_size, 0) != 0) {
        snprintf(why, whylen, "short read (truncated while reading?)");
    } else {
        size_t len = (size_t)st.st_size, off, size;
        unsigned idx[CA_STATS_MAX_RECORDS];
        unsigned used = top_seg_records_used(buf, len, idx, CA_STATS_MAX_RECORDS);
        ca_stats_header h;
        memcpy(&h, buf, sizeof h);
        /* A dead process writes no more: its copy is final, and waiting on it is waste. */
        if (h.pid != (uint64_t)pid || !top_pid_alive(pid, h.start_time))
            used = 0;
        /* A record that never settles is marked torn (odd seq): the parser skips it. After
         * one, the writer is likely stopped: the others get one try each. */
        int tries = SEQLOCK_TRIES;
        for (unsigned k = 0; k < used && top_seg_record_span(buf, len, idx[k], &off, &size); k++)
            if (reread_record(fd, buf + off, off, size, tries) != 0) {
                uint64_t torn = 1;
                memcpy(buf + off, &torn, sizeof torn);
                tries = 1;
            }
        rc = top_seg_parse(buf, len, (long)uid, (long)pid, out, why, whylen);
    }
    free(buf);
    close(fd);
    return rc;
}

int top_pid_alive(int pid, uint64_t start_time)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
        return 0;
    if (start_time == 0)
        return 1;
    uint64_t now = ca_stats_proc_start_time(pid);
    return now == 0 || now == start_time;
}

/* Remove a stale segment if it is ours (or we are root), and only if the name still refers
 * to the very file we judged: a new process may have taken the pid meanwhile. */
static int reap(int dirfd, const char *name, const struct stat *judged)
{
    struct stat now;
    uid_t me = geteuid();
    if (me != 0 && judged->st_uid != me)
        return 0;
    if (fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0 || now.st_ino != judged->st_ino ||
        now.st_dev != judged->st_dev)
        return 0;
    return unlinkat(dirfd, name, 0) == 0;
}

/* The writer beats CLOCK_MONOTONIC, which every process of the machine shares (a beat from
 * the future, as from another time namespace, counts as fresh). */
static uint64_t heartbeat_age_ms(uint64_t beat_ns)
{
    uint64_t now = now_ns();
    return now > beat_ns ? (now - beat_ns) / 1000000u : 0;
}

static int cmp_pid(const void *a, const void *b)
{
    const top_proc *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

int top_scan(const char *dir, int pid_filter, int reap_stale, top_list *out, FILE *notes)
{
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    g_reread_deadline_ns = now_ns() + SCAN_REREAD_BUDGET_NS;
    int dfd = dirfd(d);
    unsigned cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        unsigned uid;
        int pid;
        if (top_seg_name(e->d_name, &uid, &pid) != 0)
            continue;
        if (pid_filter > 0 && pid != pid_filter)
            continue;
        top_proc p;
        char why[160];
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue; /* gone meanwhile */
        if (top_read_segment(dfd, e->d_name, &p, why, sizeof why) != 0) {
            if (notes)
                fprintf(notes, "cachealloc-top: skipping %s/%s: %s\n", dir, e->d_name, why);
            continue;
        }
        p.alive = top_pid_alive(p.pid, p.start_time);
        p.heartbeat_age_ms = heartbeat_age_ms(p.heartbeat_ns);
        p.responding = p.alive && p.heartbeat_age_ms < TOP_STALE_MS;
        if (!p.alive && reap_stale)
            p.removed = reap(dfd, e->d_name, &st);
        if (out->n == cap) {
            unsigned ncap = cap ? cap * 2 : 16;
            top_proc *np = realloc(out->procs, ncap * sizeof *np);
            if (!np) {
                top_proc_clear(&p);
                break;
            }
            out->procs = np;
            cap = ncap;
        }
        out->procs[out->n++] = p;
    }
    closedir(d);
    g_reread_deadline_ns = 0;
    if (out->n > 1)
        qsort(out->procs, out->n, sizeof *out->procs, cmp_pid);
    return 0;
}

void top_list_clear(top_list *l)
{
    for (unsigned i = 0; i < l->n; i++)
        top_proc_clear(&l->procs[i]);
    free(l->procs);
    l->procs = NULL;
    l->n = 0;
}
