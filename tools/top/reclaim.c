/* The one place the reader writes to a segment. The header is mapped (atomic read-modify-write
 * needs memory, not pread), after the file passed the same checks as any read; accesses to
 * the mapping run under a SIGBUS guard in case the file is truncated meanwhile. */
#include "reclaim.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "seg_scan.h"

static sigjmp_buf g_bus_jmp;

static void on_sigbus(int sig)
{
    (void)sig;
    siglongjmp(g_bus_jmp, 1);
}

/* Run one access to the mapping with SIGBUS turned into an error. */
#define GUARDED(old, body, on_fault)                                                     \
    do {                                                                                 \
        struct sigaction sa_;                                                            \
        memset(&sa_, 0, sizeof sa_);                                                     \
        sa_.sa_handler = on_sigbus;                                                      \
        sigemptyset(&sa_.sa_mask);                                                       \
        sigaction(SIGBUS, &sa_, &(old));                                                 \
        if (sigsetjmp(g_bus_jmp, 1) == 0) {                                              \
            body;                                                                        \
        } else {                                                                         \
            on_fault;                                                                    \
        }                                                                                \
        sigaction(SIGBUS, &(old), NULL);                                                 \
    } while (0)

static int find_name(const char *dir, int pid, char *name, size_t len)
{
    /* Our own uid first; root may also reach other users' segments. */
    unsigned me = (unsigned)geteuid();
    char path[4096];
    struct stat st;
    snprintf(name, len, CA_STATS_NAME_PREFIX "%u.%d", me, pid);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (lstat(path, &st) == 0)
        return 0;
    if (me != 0)
        return -1;
    top_list l;
    if (top_scan(dir, pid, 0, &l, NULL) != 0 || l.n == 0) {
        top_list_clear(&l);
        return -1;
    }
    snprintf(name, len, CA_STATS_NAME_PREFIX "%u.%d", l.procs[0].uid, pid);
    top_list_clear(&l);
    return 0;
}

int top_reclaim_send(const char *dir, int pid, int dev, top_reclaim *r, char *why, size_t whylen)
{
    char name[64];
    top_proc p;
    memset(r, 0, sizeof *r);
    if (find_name(dir, pid, name, sizeof name) != 0) {
        snprintf(why, whylen, "no segment of pid %d in %s", pid, dir);
        return -1;
    }
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        snprintf(why, whylen, "cannot open %s: %s", dir, strerror(errno));
        return -1;
    }
    if (top_read_segment(dfd, name, &p, why, whylen) != 0) {
        close(dfd);
        return -1;
    }
    top_proc_clear(&p);
    if (!top_pid_alive(p.pid, p.start_time)) {
        close(dfd);
        snprintf(why, whylen, "process %d is gone", pid);
        return -1;
    }
    int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    close(dfd);
    if (fd < 0) {
        snprintf(why, whylen, "cannot open for writing: %s", strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != p.uid ||
        (geteuid() != 0 && st.st_uid != geteuid()) ||
        st.st_size < (off_t)sizeof(ca_stats_header)) {
        close(fd);
        snprintf(why, whylen, "segment of pid %d is not ours to write", pid);
        return -1;
    }
    void *map = mmap(NULL, sizeof(ca_stats_header), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        snprintf(why, whylen, "cannot map: %s", strerror(errno));
        return -1;
    }
    ca_stats_header *h = map;
    struct sigaction old;
    volatile int ok = 0;
    volatile uint64_t seq = 0;
    GUARDED(old, {
        if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) == CA_STATS_MAGIC) {
            seq = ca_stats_reclaim_post(h, dev, 0);
            ok = 1;
        }
    }, ok = 0);
    if (!ok) {
        munmap(map, sizeof(ca_stats_header));
        snprintf(why, whylen, "segment of pid %d changed under us", pid);
        return -1;
    }
    r->pid = pid;
    r->map = map;
    r->maplen = sizeof(ca_stats_header);
    r->seq = seq;
    return 0;
}

int top_reclaim_poll(top_reclaim *r, uint64_t *bytes)
{
    if (!r->map)
        return -1;
    ca_stats_header *h = r->map;
    struct sigaction old;
    volatile int rc = -1;
    GUARDED(old, {
        uint64_t done = __atomic_load_n(&h->reclaim_done, __ATOMIC_ACQUIRE);
        uint64_t b = __atomic_load_n(&h->reclaim_bytes, __ATOMIC_RELAXED);
        uint64_t again = __atomic_load_n(&h->reclaim_done, __ATOMIC_ACQUIRE);
        rc = 0;
        /* Answered when done reached our seq; bytes belong to us only if it is exactly ours
         * (a later request may have overtaken; then report what that one released). */
        if (done == again && done >= r->seq) {
            *bytes = b;
            rc = 1;
        }
    }, rc = -1);
    return rc;
}

void top_reclaim_close(top_reclaim *r)
{
    if (r->map)
        munmap(r->map, r->maplen);
    r->map = NULL;
}
