/* A storm near capacity (issue 37, docs/arena.md "A good neighbour"): STORM_PROCS processes
 * (16) on one simulated device shared as processes share a GPU (SIMDEV_SHARED) each allocate
 * and free random sizes through the real runtime for STORM_SECONDS (10), the device at 95% of
 * their combined peak (each holds at most PEAK live, and the device has 95% of all of theirs).
 * The storm runs under the cache, then plainly (the same program without LD_PRELOAD), and each
 * run prints what was tried, served and refused.
 *
 * The promise checked: a request is served whenever its size fits what the device has free
 * plus what the processes can give back (their empty segments and free mappings, what a
 * neighbour's reclaim returns). What "fits" means at request time, and how it is judged:
 *   - Every process keeps a ledger of its live blocks (address, size) in memory the processes
 *     share. What a process holds that it cannot give back is the pages its live blocks touch
 *     under the cache (every mapping is one 2 MiB page of the simulator, CACHEALLOC_EXPANDABLE's
 *     default piece) and their bytes plainly. What it can give back is what the simulator says
 *     it uses (the shared table, simdev.h) less that. The figure, "could have", is the device's
 *     free memory plus every process's part, the refused one's own included.
 *   - A request needs its size rounded up to a page plus one page under the cache (a block may
 *     straddle a page boundary and share no page with a live block), its size rounded to 512
 *     bytes plainly: that is the tolerance.
 *   - Read while the others run, the figure is racy: between the refusal and the reading the
 *     others free and allocate. So a refusal whose size fits the racy figure is checked with
 *     the storm held still: the refused process takes the storm's lock for writing (every
 *     allocation and free of every process holds it for reading, so none is in flight; the
 *     neighbours' monitor threads still answer), reads the figure again, now exact, and when
 *     the size fits it asks again. That request must be served: a refusal there fails the test.
 *     Refusals that fit only the racy figure are counted, both ways: the plain run's count
 *     shows what the race alone makes of it.
 * Also checked: no round of asking the neighbours takes longer than its bound (the wait,
 * CA_NEIGHBOURS_WAIT_MS, plus STORM_ROUND_SLACK_MS, 500, for a loaded machine), and every live
 * block keeps its contents (its ends, checked when it is freed, during the storm or at its end:
 * a page given back from under a live block faults in the simulator).
 * The rounds are counted from CACHEALLOC_VERBOSE's line, read by each process from its own
 * standard error.
 *
 * Usage: storm [cached|plain|both [SECONDS]]   (default both, 10 s)
 * STORM_SECONDS, when set, overrides SECONDS (the suite gives a short run, shorter under the
 * sanitizers; docs/arena.md quotes the 60-second one and its command); STORM_PROCS (16) and
 * STORM_SEED (37) set the rest. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"
#include "stats/neighbours.h"

#define MIB ((uint64_t)1 << 20)
#define PAGE (2 * MIB)            /* the simulator's mapping granularity */
#define PEAK (128 * MIB)          /* the most a process holds live */
#define MIN_SIZE (256 * 1024)
#define MAX_SIZE (32 * MIB)
#define MAX_PROCS 16
#define MAX_LIVE 512
#define LOCK_WAIT_S 60            /* a lock not had in this long: a process is stuck */

struct counts {
    uint64_t tried, served, after_round, by_neighbours, refused, unfit, racy_fit;
    uint64_t check_unfit, check_served, violations, rounds, given_bytes;
    uint64_t round_max_ns, call_max_ns, bad_contents, held_ns, served_ns, refused_ns;
};

struct entry {
    uint64_t addr, size;
};

/* One process's part: its ledger (written by it, read by the others, under a seqlock) and
 * its counts, written once at the end. */
struct worker {
    uint64_t seq;
    int64_t pid;
    uint32_t n;
    int ready, leaving, done;
    struct entry live[MAX_LIVE];
    struct counts c;
};

struct shared {
    pthread_rwlock_t storm;       /* read: an allocation or free; write: a check */
    uint64_t capacity;
    uint64_t start_ns, end_ns;    /* 0 until every process is ready */
    int cached, nprocs;
    char table[128];              /* the simulator's shared table */
    struct worker w[MAX_PROCS];
};

static struct shared *sh;
static int me;
static int err_fd = 2;            /* standard error, before the pipe took its place */
static int pipe_rd = -1;
static uint64_t rng;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double uniform(void) { return (double)(next_rand() >> 11) / 9007199254740992.0; }

static uint64_t round_up(uint64_t x, uint64_t to) { return (x + to - 1) / to * to; }

static uint64_t env_u64(const char *name, uint64_t def)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 10) : def;
}

/* ---- the processes' own figures ---- */

/* What process w holds that it cannot give back: the pages its live blocks touch (cached), or
 * their bytes as the simulator charges them (plain). Read while w runs: under its seqlock. */
static uint64_t holds(const struct worker *w, bool cached)
{
    static struct entry copy[MAX_LIVE];
    uint32_t n;
    for (;;) {
        uint64_t s0 = __atomic_load_n(&w->seq, __ATOMIC_ACQUIRE);
        n = __atomic_load_n(&w->n, __ATOMIC_RELAXED);
        if (n > MAX_LIVE)
            n = MAX_LIVE;
        /* Acquire loads rather than a fence, which ThreadSanitizer does not know. */
        for (uint32_t k = 0; k < n; k++) {
            copy[k].addr = __atomic_load_n(&w->live[k].addr, __ATOMIC_ACQUIRE);
            copy[k].size = __atomic_load_n(&w->live[k].size, __ATOMIC_ACQUIRE);
        }
        if (!(s0 & 1) && __atomic_load_n(&w->seq, __ATOMIC_RELAXED) == s0)
            break;
        sched_yield();
    }
    uint64_t bytes = 0;
    if (!cached) {
        /* As the simulator charges cuMemAlloc: whole pages from a page up, smaller blocks
         * packed into shared pages (sd_addr.c). */
        uint64_t small = 0;
        for (uint32_t k = 0; k < n; k++)
            if (copy[k].size >= PAGE)
                bytes += round_up(copy[k].size, PAGE);
            else
                small += round_up(copy[k].size, 512);
        return bytes + round_up(small, PAGE);
    }
    /* The union of the pages touched: blocks sorted by address, runs of pages merged. */
    for (uint32_t k = 1; k < n; k++)
        for (uint32_t j = k; j > 0 && copy[j - 1].addr > copy[j].addr; j--) {
            struct entry t = copy[j];
            copy[j] = copy[j - 1];
            copy[j - 1] = t;
        }
    uint64_t end = 0; /* first page past the run so far */
    for (uint32_t k = 0; k < n; k++) {
        uint64_t lo = copy[k].addr / PAGE;
        uint64_t hi = (copy[k].addr + round_up(copy[k].size, 512) - 1) / PAGE + 1;
        if (lo < end)
            lo = end;
        if (hi > lo) {
            bytes += (hi - lo) * PAGE;
            end = hi;
        }
    }
    return bytes;
}

/* What a request could get right now: the device's free memory, plus what every process uses
 * beyond what it holds. */
static uint64_t could_have(void)
{
    static struct simdev_shared_slot slots[SIMDEV_SHARED_SLOTS];
    int fd = open(sh->table, O_RDONLY | O_CLOEXEC);
    EXPECT(fd >= 0);
    ssize_t got = pread(fd, slots, sizeof slots, 0);
    close(fd);
    EXPECT(got == (ssize_t)sizeof slots);
    uint64_t used = 0, back = 0;
    for (int s = 0; s < SIMDEV_SHARED_SLOTS; s++) {
        if (slots[s].pid == 0 || kill((pid_t)slots[s].pid, 0) != 0)
            continue; /* free, or dead: the simulator clears it at its next look */
        used += slots[s].used[0];
        for (int k = 0; k < sh->nprocs; k++) {
            /* A process past its storm frees its blocks into its cache and exits: its exit
             * stops its statistics first, so it answers no more, and what it holds goes back
             * when it is gone. */
            if (sh->w[k].pid != slots[s].pid ||
                __atomic_load_n(&sh->w[k].leaving, __ATOMIC_ACQUIRE))
                continue;
            uint64_t h = holds(&sh->w[k], sh->cached);
            back += slots[s].used[0] > h ? slots[s].used[0] - h : 0;
        }
    }
    return (used < sh->capacity ? sh->capacity - used : 0) + back;
}

/* What a request of n bytes needs of the device: whole pages, and under the cache one more
 * (its block may start inside a page no live block holds). */
static uint64_t needs(uint64_t n)
{
    return round_up(n, PAGE) + (sh->cached ? PAGE : 0);
}

static void ledger_add(void *p, uint64_t n)
{
    struct worker *w = &sh->w[me];
    EXPECT(w->n < MAX_LIVE);
    /* Release stores rather than a fence, as the statistics writer does. */
    __atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&w->live[w->n].addr, (uint64_t)(uintptr_t)p, __ATOMIC_RELEASE);
    __atomic_store_n(&w->live[w->n].size, n, __ATOMIC_RELEASE);
    __atomic_store_n(&w->n, w->n + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_RELEASE);
}

static void ledger_remove(uint32_t k)
{
    struct worker *w = &sh->w[me];
    __atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_RELAXED);
    uint32_t last = w->n - 1;
    __atomic_store_n(&w->live[k].addr, w->live[last].addr, __ATOMIC_RELEASE);
    __atomic_store_n(&w->live[k].size, w->live[last].size, __ATOMIC_RELEASE);
    __atomic_store_n(&w->n, last, __ATOMIC_RELEASE);
    __atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_RELEASE);
}

/* ---- the cache's verbose lines, read from this process's own standard error ---- */

static char line_buf[1 << 16];
static size_t line_len;

static void take_line(char *s, struct counts *c, uint64_t *given)
{
    unsigned long long bytes = 0;
    double ms = 0;
    int dev = 0;
    size_t n = 0;
    if (sscanf(s, "cachealloc: device %d refused %zu bytes; other processes gave back %llu "
                  "bytes in %lf ms", &dev, &n, &bytes, &ms) == 4) {
        c->rounds++;
        c->given_bytes += bytes;
        *given += bytes;
        uint64_t ns = (uint64_t)(ms * 1e6);
        if (ns > c->round_max_ns)
            c->round_max_ns = ns;
        return;
    }
    if (strncmp(s, "cachealloc", 10) == 0)
        return; /* the cache's other lines (start, out-of-memory, summary) */
    dprintf(err_fd, "%s\n", s);
}

/* Every whole line written so far; the bytes the neighbours gave in the rounds among them. */
static uint64_t drain(struct counts *c)
{
    uint64_t given = 0;
    if (pipe_rd < 0)
        return 0;
    for (;;) {
        ssize_t r = read(pipe_rd, line_buf + line_len, sizeof line_buf - 1 - line_len);
        if (r <= 0)
            break;
        line_len += (size_t)r;
        char *start = line_buf, *nl;
        line_buf[line_len] = '\0';
        while ((nl = strchr(start, '\n')) != NULL) {
            *nl = '\0';
            take_line(start, c, &given);
            start = nl + 1;
        }
        line_len -= (size_t)(start - line_buf);
        memmove(line_buf, start, line_len);
        if (line_len == sizeof line_buf - 1)
            line_len = 0; /* a line longer than the buffer: dropped */
    }
    return given;
}

static struct counts *g_counts;
static void drain_at_exit(void)
{
    static struct counts spare;
    drain(g_counts ? g_counts : &spare);
}

/* Standard error through a pipe this process reads after each call. */
static void capture_stderr(void)
{
    int p[2];
    EXPECT(pipe(p) == 0);
    err_fd = dup(2);
    EXPECT(err_fd >= 0);
    fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
    EXPECT(dup2(p[1], 2) == 2);
    close(p[1]);
    pipe_rd = p[0];
    EXPECT(fcntl(pipe_rd, F_SETFL, O_NONBLOCK) == 0);
    atexit(drain_at_exit);
}

/* ---- one process of the storm ---- */

static struct timespec deadline_in(int s)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += s;
    return ts;
}

static void lock_storm(bool write)
{
    struct timespec ts = deadline_in(LOCK_WAIT_S);
    int rc = write ? pthread_rwlock_timedwrlock(&sh->storm, &ts)
                   : pthread_rwlock_timedrdlock(&sh->storm, &ts);
    if (rc != 0) {
        dprintf(err_fd, "storm %d: the storm's lock not had in %d s (%s)\n", me, LOCK_WAIT_S,
                strerror(rc));
        exit(3);
    }
}

/* The byte a live block's ends hold: of its address and its process. */
static unsigned char pattern(const void *p)
{
    return (unsigned char)(((uintptr_t)p >> 9) * 31 + (uintptr_t)me * 7) | 1;
}

static void set_ends(void *p, uint64_t n)
{
    CHECK(gpuMemset(p, pattern(p), 1));
    CHECK(gpuMemset((char *)p + n - 1, pattern(p), 1));
}

static bool ends_kept(void *p, uint64_t n)
{
    unsigned char a = 0, b = 0;
    CHECK(gpuMemcpy(&a, p, 1, gpuMemcpyDefault));
    CHECK(gpuMemcpy(&b, (char *)p + n - 1, 1, gpuMemcpyDefault));
    return a == pattern(p) && b == pattern(p);
}

/* One timed allocation; the verbose lines it left counted. */
static gpuError_t timed_malloc(void **p, uint64_t n, struct counts *c, bool *asked,
                               uint64_t *given)
{
    uint64_t rounds = c->rounds;
    uint64_t t0 = now_ns();
    gpuError_t e = gpuMalloc(p, n);
    uint64_t t = now_ns() - t0;
    if (t > c->call_max_ns)
        c->call_max_ns = t;
    *(e == gpuSuccess ? &c->served_ns : &c->refused_ns) += t;
    if (e != gpuSuccess)
        (void)gpuGetLastError();
    *given = drain(c);
    *asked = c->rounds > rounds;
    return e;
}

/* A refusal whose size fits the racy figure: checked with the storm held still. */
static void check_refusal(uint64_t n, struct counts *c)
{
    pthread_rwlock_unlock(&sh->storm);
    lock_storm(true);
    uint64_t t0 = now_ns();
    uint64_t have = could_have();
    if (needs(n) > have) {
        c->check_unfit++;
    } else {
        void *p = NULL;
        bool asked;
        uint64_t given;
        if (timed_malloc(&p, n, c, &asked, &given) == gpuSuccess) {
            c->check_served++;
            set_ends(p, n);
            ledger_add(p, n);
        } else {
            c->violations++;
            dprintf(err_fd, "storm %d: %" PRIu64 " bytes refused with the storm held, where "
                    "%" PRIu64 " could be had (%" PRIu64 " needed, %" PRIu64 " given back; "
                    "now %" PRIu64 ")%s\n", me, n, have, needs(n), given, could_have(),
                    !sh->cached || asked ? "" : "; the neighbours were not asked");
        }
    }
    c->held_ns += now_ns() - t0;
    pthread_rwlock_unlock(&sh->storm);
    lock_storm(false);
}

static void alloc_one(uint64_t n, struct counts *c)
{
    void *p = NULL;
    bool asked;
    uint64_t given;
    c->tried++;
    if (timed_malloc(&p, n, c, &asked, &given) == gpuSuccess) {
        c->served++;
        c->after_round += asked;
        c->by_neighbours += asked && given > 0;
        set_ends(p, n);
        ledger_add(p, n);
        return;
    }
    c->refused++;
    if (needs(n) > could_have()) {
        c->unfit++;
        return;
    }
    c->racy_fit++;
    check_refusal(n, c);
}

static void free_one(uint32_t k, struct counts *c)
{
    struct worker *w = &sh->w[me];
    void *p = (void *)(uintptr_t)w->live[k].addr;
    uint64_t n = w->live[k].size;
    if (!ends_kept(p, n))
        c->bad_contents++;
    ledger_remove(k);
    CHECK(gpuFree(p));
    drain(c);
}

static int worker(int index)
{
    me = index;
    struct worker *w = &sh->w[me];
    struct counts c;
    memset(&c, 0, sizeof c);
    g_counts = &c;
    if (sh->cached)
        capture_stderr();
    rng = env_u64("STORM_SEED", 37) * 0x9E3779B97F4A7C15ull + (uint64_t)me * 0x100000001b3ull + 1;
    CHECK(gpuFree(NULL)); /* the context: this process takes its slot of the device */
    w->pid = getpid();
    __atomic_store_n(&w->ready, 1, __ATOMIC_RELEASE);
    while (__atomic_load_n(&sh->start_ns, __ATOMIC_ACQUIRE) == 0 || now_ns() < sh->start_ns)
        sleep_ms(1);
    while (now_ns() < sh->end_ns) {
        uint64_t live = 0;
        for (uint32_t k = 0; k < w->n; k++)
            live += w->live[k].size;
        uint64_t n = (uint64_t)(MIN_SIZE * exp(uniform() * log((double)MAX_SIZE / MIN_SIZE)));
        lock_storm(false);
        /* Near its peak most of the time: above 80% of it, a coin decides. */
        if (w->n < MAX_LIVE && live + n <= PEAK && (live < PEAK / 10 * 8 || (next_rand() & 1)))
            alloc_one(n, &c);
        else if (w->n > 0)
            free_one((uint32_t)(next_rand() % w->n), &c);
        pthread_rwlock_unlock(&sh->storm);
        sleep_ms((long)(next_rand() % 3)); /* the program's own work */
    }
    lock_storm(false);
    __atomic_store_n(&w->leaving, 1, __ATOMIC_RELEASE);
    while (w->n > 0)
        free_one(w->n - 1, &c);
    pthread_rwlock_unlock(&sh->storm);
    drain(&c);
    w->c = c;
    __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
    return 0;
}

/* ---- the orchestrator ---- */

static void add(struct counts *t, const struct counts *c)
{
    uint64_t *a = (uint64_t *)t;
    const uint64_t *b = (const uint64_t *)c;
    for (size_t k = 0; k < sizeof *t / sizeof(uint64_t); k++) {
        if (&a[k] == &t->round_max_ns || &a[k] == &t->call_max_ns)
            a[k] = a[k] > b[k] ? a[k] : b[k];
        else
            a[k] += b[k];
    }
}

static int run_storm(const char *self, int memfd, bool cached, unsigned secs, int nprocs)
{
    memset(sh, 0, sizeof *sh);
    pthread_rwlockattr_t attr;
    pthread_rwlockattr_init(&attr);
    pthread_rwlockattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&sh->storm, &attr);
    pthread_rwlockattr_destroy(&attr);
    sh->cached = cached;
    sh->nprocs = nprocs;
    sh->capacity = round_up((uint64_t)nprocs * PEAK / 100 * 95, 512);
    char name[64], bytes[32], fdtext[16];
    snprintf(name, sizeof name, "storm-%d-%s", (int)getpid(), cached ? "cached" : "plain");
    snprintf(sh->table, sizeof sh->table, "/dev/shm/simdev.%u.%s", (unsigned)getuid(), name);
    snprintf(bytes, sizeof bytes, "%" PRIu64, sh->capacity);
    snprintf(fdtext, sizeof fdtext, "%d", memfd);
    setenv("SIMDEV_SHARED", name, 1);
    setenv("SIMDEV_MEMORY", bytes, 1);
    pid_t pids[MAX_PROCS];
    fflush(NULL);
    for (int i = 0; i < nprocs; i++) {
        pids[i] = fork();
        EXPECT(pids[i] >= 0);
        if (pids[i] == 0) {
            if (!cached)
                unsetenv("LD_PRELOAD");
            char idx[16];
            snprintf(idx, sizeof idx, "%d", i);
            execl(self, self, "worker", idx, fdtext, (char *)NULL);
            _exit(127);
        }
    }
    for (int i = 0; i < nprocs; i++)
        for (int t = 0; !__atomic_load_n(&sh->w[i].ready, __ATOMIC_ACQUIRE); t++) {
            int st;
            if (t > 60000 || waitpid(pids[i], &st, WNOHANG) == pids[i]) {
                fprintf(stderr, "storm: process %d never started\n", i);
                for (int k = 0; k < nprocs; k++)
                    kill(pids[k], SIGKILL);
                unlink(sh->table);
                return 1;
            }
            sleep_ms(1);
        }
    uint64_t t0 = now_ns() + 50 * 1000000ull;
    sh->end_ns = t0 + (uint64_t)secs * 1000000000ull;
    __atomic_store_n(&sh->start_ns, t0, __ATOMIC_RELEASE);
    int failed = 0;
    for (int i = 0; i < nprocs; i++) {
        int st = 0;
        EXPECT(waitpid(pids[i], &st, 0) == pids[i]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !sh->w[i].done) {
            fprintf(stderr, "storm: process %d ended with status %#x\n", i, st);
            failed = 1;
        }
    }
    unlink(sh->table);
    struct counts t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < nprocs; i++)
        add(&t, &sh->w[i].c);
    uint64_t bound_ns = (CA_NEIGHBOURS_WAIT_MS + env_u64("STORM_ROUND_SLACK_MS", 500)) * 1000000ull;
    printf("%s: %d processes, %u s, a device of %" PRIu64 " MiB (95%% of %d x %" PRIu64
           " MiB)\n", cached ? "under the cache" : "plainly", nprocs, secs, sh->capacity / MIB,
           nprocs, PEAK / MIB);
    printf("  requests %" PRIu64 ", served %" PRIu64 ", refused %" PRIu64 "\n", t.tried,
           t.served, t.refused);
    printf("  refused: %" PRIu64 " did not fit, %" PRIu64 " fitted the racy figure; of these, with "
           "the storm held, %" PRIu64 " did not fit, %" PRIu64 " were served, %" PRIu64
           " refused\n", t.unfit, t.racy_fit, t.check_unfit, t.check_served, t.violations);
    if (cached)
        printf("  served after asking the neighbours %" PRIu64 " (given memory: %" PRIu64
               "); rounds %" PRIu64 ", %" PRIu64 " MiB given back, longest round %.1f ms "
               "(bound %" PRIu64 " ms)\n", t.after_round, t.by_neighbours, t.rounds,
               t.given_bytes / MIB, (double)t.round_max_ns / 1e6, bound_ns / 1000000);
    printf("  time in requests: served %.1f s, refused %.1f s, of %d x %u s; longest request "
           "%.1f ms\n", (double)t.served_ns / 1e9, (double)t.refused_ns / 1e9, nprocs, secs,
           (double)t.call_max_ns / 1e6);
    printf("  the storm held for checks %.1f%% of the time; live blocks that lost their "
           "contents: %" PRIu64 "\n", 100.0 * (double)t.held_ns / ((double)secs * 1e9),
           t.bad_contents);
    fflush(stdout);
    return failed || t.violations || t.bad_contents || t.round_max_ns > bound_ns;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "worker") == 0) {
        int memfd = atoi(argv[3]);
        sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
        EXPECT(sh != MAP_FAILED);
        close(memfd);
        return worker(atoi(argv[2]));
    }
    const char *mode = argc > 1 ? argv[1] : "both";
    unsigned secs = (unsigned)env_u64("STORM_SECONDS", argc > 2 ? strtoull(argv[2], NULL, 10) : 10);
    int nprocs = (int)env_u64("STORM_PROCS", 16);
    if (nprocs < 2 || nprocs > MAX_PROCS || secs == 0) {
        fprintf(stderr, "storm: STORM_PROCS 2 to %d, STORM_SECONDS 1 or more\n", MAX_PROCS);
        return 2;
    }
    gpu_own_stats_dir();
    setenv("CACHEALLOC_STATS", "1", 1);
    setenv("CACHEALLOC_VERBOSE", "1", 1);
    /* Only the asking gives memory back: an idle release would hide a neighbour that never
     * answers. */
    setenv("CACHEALLOC_IDLE_RELEASE", "0", 1);
    int memfd = memfd_create("storm", 0);
    EXPECT(memfd >= 0 && ftruncate(memfd, sizeof *sh) == 0);
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
    EXPECT(sh != MAP_FAILED);
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    EXPECT(len > 0);
    self[len] = '\0';
    int rc = 0;
    if (strcmp(mode, "plain") != 0)
        rc |= run_storm(self, memfd, true, secs, nprocs);
    if (strcmp(mode, "cached") != 0)
        rc |= run_storm(self, memfd, false, secs, nprocs);
    return rc;
}
