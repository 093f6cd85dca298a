/* Asking the neighbours: the other processes under the cache that run as this user and with
 * this API. When the device refuses this process memory that their caches hold free, they
 * are asked, through their statistics segments, to give it back (the request that
 * `cachealloc-top --reclaim` sends, flagged as a neighbour's). Only free cached memory is ever
 * given: a request cannot free live memory. docs/arena.md, "A good neighbour". */
#include "stats/neighbours.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "stats/abi.h"

#define MAX_ASKED 64
#define POLL_NS 1000000u            /* how often the answers are looked for */
/* A neighbour whose monitor thread has not beaten for this long (it beats every 250 ms and
 * at every answer) is stopped, hung or dead: it is asked, but not waited for. */
#define STALE_NS 1000000000u
#define LIVENESS_POLLS 50           /* polls between looks for a process gone meanwhile */

typedef struct asked {
    ca_stats_header *h;
    size_t len;
    uint64_t seq;
    pid_t pid; /* as checked when the segment was opened */
} asked;

/* One round at a time per process (g_round_lock guards the rest). */
static pthread_mutex_t g_round_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_round_cond = PTHREAD_COND_INITIALIZER;
static bool g_round_running;    /* a thread is asking now                  */
static uint64_t g_rounds;       /* rounds ended                            */
static uint64_t g_round_bytes;  /* what the last one brought back          */

static const char *segment_dir(void)
{
    const char *dir = secure_getenv(CA_STATS_DIR_ENV);
    return dir && *dir ? dir : CA_STATS_DEFAULT_DIR;
}

/* The neighbour's segment mapped for a request, when it is one: a regular file of ours that
 * holds a complete header of version 3 or later, of the same API, of a live process (*pid) that is not
 * this one. NULL otherwise. Writers never shrink their file, so the mapping stays readable.
 * What its records say it holds is not looked at: they may be 250 ms old, older than the
 * frees that matter (on an H100 a process allocates and frees 48 GB in less), and a neighbour
 * with nothing free answers 0 at the cost of a look at its pools. */
static ca_stats_header *open_neighbour(int dfd, const char *name, const char *api, size_t *len,
                                       pid_t *pid)
{
    int fd = openat(dfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return NULL;
    struct stat st;
    ca_stats_header h;
    void *map = MAP_FAILED;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
        pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h && h.magic == CA_STATS_MAGIC &&
        h.abi_version >= 3 && h.abi_version <= CA_STATS_ABI_VERSION &&
        h.header_size == sizeof h && h.record_size == ca_stats_record_size(h.abi_version) &&
        h.device_capacity <= CA_STATS_MAX_RECORDS && h.pid != (uint64_t)getpid() &&
        strncmp(h.api, api, sizeof h.api) == 0) {
        *len = sizeof h + (size_t)h.device_capacity * h.record_size;
        if ((off_t)*len <= st.st_size)
            map = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (map == MAP_FAILED)
        return NULL;
    ca_stats_header *m = map;
    /* A dead process's leftover, or its pid reused by another: not a neighbour. */
    bool alive = (kill((pid_t)h.pid, 0) == 0 || errno == EPERM) &&
                 ca_stats_proc_start_time((int)h.pid) == h.start_time;
    if (!alive || m->device_capacity != h.device_capacity) {
        munmap(map, *len);
        return NULL;
    }
    *pid = (pid_t)h.pid;
    return m;
}

/* Whether a neighbour's beat is older than STALE_NS, or as far in the future (a corrupted
 * word: the clock is the same for every process). */
static bool stale(uint64_t beat)
{
    uint64_t now = ca_now_ns();
    return beat > now ? beat - now > STALE_NS : now - beat > STALE_NS;
}

/* Post a request to every neighbour; how many are to be waited for (those that look alive:
 * their monitor beat within STALE_NS of now). */
static int ask_all(const char *api, asked *list)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, CA_STATS_NAME_PREFIX "%u.", (unsigned)geteuid());
    int n = 0;
    DIR *dir = opendir(segment_dir());
    if (!dir)
        return 0;
    struct dirent *e;
    while (n < MAX_ASKED && (e = readdir(dir)) != NULL) {
        if (strncmp(e->d_name, prefix, strlen(prefix)) != 0)
            continue;
        size_t len;
        pid_t pid;
        ca_stats_header *h = open_neighbour(dirfd(dir), e->d_name, api, &len, &pid);
        if (!h)
            continue;
        uint64_t seq = ca_stats_reclaim_post(h, -1, CA_STATS_RECLAIM_NEIGHBOUR);
        if (stale(__atomic_load_n(&h->heartbeat_ns, __ATOMIC_ACQUIRE)))
            munmap(h, len); /* it serves the request if it ever runs again */
        else
            list[n++] = (asked){h, len, seq, pid};
    }
    closedir(dir);
    return n;
}

/* Whether the neighbour asked in a can still answer: not when it stopped its statistics (exit:
 * its beat is then 0) or is gone (a reaped process; a zombie is waited for). */
static bool may_answer(const asked *a, bool look_for_process)
{
    if (__atomic_load_n(&a->h->heartbeat_ns, __ATOMIC_ACQUIRE) == 0)
        return false;
    return !look_for_process || kill(a->pid, 0) == 0 || errno != ESRCH;
}

/* Wait for the answers until deadline; the bytes the answered ones released. Unmaps all. */
static uint64_t collect(asked *list, int n, uint64_t deadline)
{
    uint64_t bytes = 0;
    int left = n;
    for (unsigned poll = 0; left > 0; poll++) {
        for (int i = 0; i < n; i++) {
            if (!list[i].h)
                continue;
            if (__atomic_load_n(&list[i].h->reclaim_done, __ATOMIC_ACQUIRE) >= list[i].seq) {
                /* A later request may have overtaken ours: its answer counts the same memory. */
                bytes += __atomic_load_n(&list[i].h->reclaim_bytes, __ATOMIC_RELAXED);
            } else if (may_answer(&list[i], poll % LIVENESS_POLLS == LIVENESS_POLLS - 1)) {
                continue;
            }
            munmap(list[i].h, list[i].len);
            list[i].h = NULL;
            left--;
        }
        if (left == 0 || ca_now_ns() >= deadline)
            break;
        struct timespec ts = {0, POLL_NS};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < n; i++)
        if (list[i].h)
            munmap(list[i].h, list[i].len);
    return bytes;
}

uint64_t ca_neighbours_ask(const char *api, unsigned wait_ms)
{
    pthread_mutex_lock(&g_round_lock);
    if (g_round_running) {
        /* Another thread's round is under way: its answer is this thread's too, and the wait
         * stays within that round's. */
        uint64_t seen = g_rounds;
        while (g_rounds == seen)
            pthread_cond_wait(&g_round_cond, &g_round_lock);
        uint64_t bytes = g_round_bytes;
        pthread_mutex_unlock(&g_round_lock);
        return bytes;
    }
    g_round_running = true;
    pthread_mutex_unlock(&g_round_lock);

    uint64_t now = ca_now_ns();
    asked list[MAX_ASKED];
    int n = ask_all(api, list);
    uint64_t bytes = n ? collect(list, n, now + (uint64_t)wait_ms * 1000000u) : 0;

    pthread_mutex_lock(&g_round_lock);
    g_round_running = false;
    g_rounds++;
    g_round_bytes = bytes;
    pthread_cond_broadcast(&g_round_cond);
    pthread_mutex_unlock(&g_round_lock);
    return bytes;
}

void ca_neighbours_after_fork(void)
{
    /* A round under way in another thread at the fork never ends in the child. */
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
    g_round_lock = lock;
    g_round_cond = cond;
    g_round_running = false;
}
