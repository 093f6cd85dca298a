/* What a process that asks in a tight loop costs its neighbour (issue 37, docs/arena.md "A
 * good neighbour"). A neighbour under the cache runs an allocation loop (each pass allocates
 * eight blocks of 1 to 24 MiB, writes a byte of each and frees them, the cache serving them
 * again and again) on a simulated device shared with an asker, for RATE_SECONDS (2) while
 * the asker:
 *   idle     does nothing: the baseline (measured first and last);
 *   no-ask   is refused in a tight loop under the cache with CACHEALLOC_NEIGHBOURS=0: the
 *            CPU such a loop takes on this machine, without asking anyone;
 *   library  the same loop asking: every refusal asks the neighbours (the ladder's rung 8);
 *   raw      posts reclaim requests straight into the neighbour's statistics segment, each
 *            as soon as the last was answered (a script of the same user, or a buggy tool).
 * Prints, for each, the neighbour's passes a second, its program thread's CPU a pass and its
 * other threads' share of a CPU (the monitor's answers among them), then what the library and
 * raw askers cost. Fails when the neighbour answered the raw asker more than 100 times a
 * second (the writer's limit: one reclaim per 10 ms at the most), when its live block lost
 * its contents, or, with RATE_MAX_COST=N, when an asker cost it more than N% more CPU a pass.
 * The suite does not set it: on a shared machine the CPU figures move with the load.
 * Run with CACHEALLOC_STATS=1 and a private CACHEALLOC_SHM_DIR; the device is shared under a
 * SIMDEV_SHARED name of the test's own. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"
#include "stats/abi.h"

#define MIB ((size_t)1 << 20)

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The neighbour: holds a live block, then runs passes until told to stop, and at each
 * "count" message from the parent answers its passes so far, the CPU time the process has
 * used and the part its program thread used (the rest: the cache's monitor thread, which
 * answers the requests, and the simulator's stream threads). */
static int neighbour(int cmd, int reply)
{
    static const size_t sizes[8] = {1, 3, 24, 2, 8, 5, 16, 12};
    void *live = NULL, *p[8];
    CHECK(gpuMalloc(&live, 32 * MIB));
    CHECK(gpuMemset(live, 0x4E, 32 * MIB));
    CHECK(gpuDeviceSynchronize());
    uint64_t passes = 0;
    char c = 'r';
    if (write(reply, &c, 1) != 1)
        return 2;
    fcntl(cmd, F_SETFL, O_NONBLOCK);
    for (;;) {
        for (int i = 0; i < 8; i++) {
            CHECK(gpuMalloc(&p[i], sizes[i] * MIB));
            CHECK(gpuMemset(p[i], i, 1));
        }
        for (int i = 0; i < 8; i++)
            CHECK(gpuFree(p[i]));
        passes++;
        ssize_t r = read(cmd, &c, 1);
        if (r == 1 && c == 'c') {
            uint64_t m[3] = {passes, cpu_ns(CLOCK_PROCESS_CPUTIME_ID),
                             cpu_ns(CLOCK_THREAD_CPUTIME_ID)};
            if (write(reply, m, sizeof m) != sizeof m)
                return 2;
        }
        if (r == 0 || (r == 1 && c == 'q'))
            break;
    }
    unsigned char ends[2] = {0, 0};
    CHECK(gpuMemcpy(&ends[0], live, 1, gpuMemcpyDefault));
    CHECK(gpuMemcpy(&ends[1], (char *)live + 32 * MIB - 1, 1, gpuMemcpyDefault));
    CHECK(gpuFree(live));
    return ends[0] == 0x4E && ends[1] == 0x4E ? 0 : 1;
}

/* The asker under the cache: refused in a loop until killed. */
static int library_asker(void)
{
    /* One line on standard error a refusal: none wanted here. */
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0)
        dup2(null, 2);
    size_t fr = 0, total = 0;
    CHECK(gpuMemGetInfo(&fr, &total));
    for (;;) {
        void *p = NULL;
        if (gpuMalloc(&p, total - 16 * MIB) == gpuSuccess)
            return 3; /* the neighbour holds more than that live: never served */
        (void)gpuGetLastError();
    }
}

/* The raw asker: requests posted into the neighbour's segment, each once the last was
 * answered (or 100 ms passed), until killed; *answers counts the answers. */
static int raw_asker(pid_t nb, uint64_t *answers)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/" CA_STATS_NAME_PREFIX "%u.%d", getenv(CA_STATS_DIR_ENV),
             (unsigned)geteuid(), (int)nb);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    void *m = fd < 0 ? MAP_FAILED
                     : mmap(NULL, sizeof(ca_stats_header), PROT_READ | PROT_WRITE, MAP_SHARED,
                            fd, 0);
    if (fd >= 0)
        close(fd);
    if (m == MAP_FAILED)
        return 4;
    ca_stats_header *h = m;
    for (;;) {
        uint64_t seq = ca_stats_reclaim_post(h, -1, CA_STATS_RECLAIM_NEIGHBOUR);
        uint64_t until = now_ns() + 100 * 1000000ull;
        while (__atomic_load_n(&h->reclaim_done, __ATOMIC_ACQUIRE) < seq && now_ns() < until) {
            struct timespec ts = {0, 50 * 1000}; /* a poll, not a spin: no CPU taken */
            nanosleep(&ts, NULL);
        }
        if (__atomic_load_n(&h->reclaim_done, __ATOMIC_ACQUIRE) >= seq)
            __atomic_fetch_add(answers, 1, __ATOMIC_RELAXED);
    }
}

struct rate {
    double passes_per_s;
    double program_us_per_pass; /* the program thread's CPU time a pass */
    double others_share;        /* the other threads' CPU time a second of wall time */
};

/* The neighbour's CPU time a pass, every thread of it. */
static double cpu_per_pass(const struct rate *r)
{
    return r->program_us_per_pass + (r->passes_per_s > 0 ? r->others_share * 1e6 / r->passes_per_s
                                                          : 0);
}

/* The neighbour over secs seconds. */
static struct rate measure(int cmd, int reply, unsigned secs)
{
    uint64_t a[3], b[3];
    char c = 'c';
    if (write(cmd, &c, 1) != 1 || read(reply, a, sizeof a) != sizeof a)
        exit(2);
    uint64_t t0 = now_ns();
    sleep_ms((long)secs * 1000);
    if (write(cmd, &c, 1) != 1 || read(reply, b, sizeof b) != sizeof b)
        exit(2);
    double wall = (double)(now_ns() - t0), passes = (double)(b[0] - a[0]);
    double prog = (double)(b[2] - a[2]), others = (double)(b[1] - a[1]) - prog;
    return (struct rate){passes * 1e9 / wall, passes > 0 ? prog / 1e3 / passes : 0,
                         others / wall};
}

int main(void)
{
    gpu_own_stats_dir();
    char table[128];
    gpu_share_device("neighbours-rate", table, sizeof table);
    unsigned secs = getenv("RATE_SECONDS") ? (unsigned)atoi(getenv("RATE_SECONDS")) : 2;
    double max_cost = getenv("RATE_MAX_COST") ? atof(getenv("RATE_MAX_COST")) : 0;
    int cmd[2], reply[2];
    if (pipe(cmd) != 0 || pipe(reply) != 0)
        return 2;
    fflush(stdout);
    pid_t nb = fork();
    if (nb == 0) {
        close(cmd[1]);
        close(reply[0]);
        _exit(neighbour(cmd[0], reply[1]));
    }
    close(cmd[0]);
    close(reply[1]);
    char c;
    if (nb < 0 || read(reply[0], &c, 1) != 1)
        return 2;
    uint64_t *answers = mmap(NULL, sizeof *answers, PROT_READ | PROT_WRITE,
                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (answers == MAP_FAILED)
        return 2;
    double answer_rate = 0;
    static const char *const modes[] = {"idle", "no-ask", "library", "raw", "idle"};
    struct rate rate[5];
    for (int m = 0; m < 5; m++) {
        pid_t asker = -1;
        if (m >= 1 && m <= 3) {
            fflush(stdout);
            asker = fork();
            if (asker == 0) {
                if (m == 1)
                    setenv("CACHEALLOC_NEIGHBOURS", "0", 1); /* read at the first call */
                _exit(m == 3 ? raw_asker(nb, answers) : library_asker());
            }
            sleep_ms(200); /* under way */
        }
        uint64_t a0 = __atomic_load_n(answers, __ATOMIC_RELAXED);
        rate[m] = measure(cmd[1], reply[0], secs);
        if (m == 3)
            answer_rate = (double)(__atomic_load_n(answers, __ATOMIC_RELAXED) - a0) / secs;
        int st = 0;
        if (asker > 0) {
            bool running = waitpid(asker, &st, WNOHANG) == 0;
            kill(asker, SIGKILL);
            waitpid(asker, &st, 0);
            if (!running) {
                fprintf(stderr, "the %s asker ended early (status %#x)\n", modes[m], st);
                return 1;
            }
        }
        printf("asker %-7s: the neighbour ran %.0f passes a second, its program thread "
               "%.1f us of CPU a pass, its other threads %.1f%% of a CPU\n", modes[m],
               rate[m].passes_per_s, rate[m].program_us_per_pass, 100 * rate[m].others_share);
    }
    c = 'q';
    int st = 0;
    if (write(cmd[1], &c, 1) != 1 || waitpid(nb, &st, 0) != nb)
        return 2;
    bool kept = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    unlink(table);
    /* The cost: the neighbour's CPU a pass (all its threads) beyond the baselines' mean, and
     * the passes a second it lost (the library asker against its twin that never asks: both
     * take the same CPU themselves, on this machine's two CPUs). */
    double base_cpu = (cpu_per_pass(&rate[0]) + cpu_per_pass(&rate[4])) / 2;
    double base_rate = (rate[0].passes_per_s + rate[4].passes_per_s) / 2;
    double worst = 0;
    for (int m = 2; m <= 3; m++) {
        double cpu = 100 * (cpu_per_pass(&rate[m]) / base_cpu - 1);
        double lost = 100 * (1 - rate[m].passes_per_s /
                                     (m == 2 ? rate[1].passes_per_s : base_rate));
        printf("the %s asker cost the neighbour %.0f%% more CPU a pass, %.0f%% of its passes\n",
               modes[m], cpu, lost);
        worst = cpu > worst ? cpu : worst;
    }
    /* At most one reclaim every 10 ms (stats/writer.c), whoever asks. */
    bool limited = answer_rate <= 110;
    printf("the raw asker had %.0f answers a second (at most 100 expected)\n", answer_rate);
    printf("the neighbour's live block kept its contents: %s\n", kept ? "yes" : "no");
    bool cheap = max_cost <= 0 || worst <= max_cost;
    if (!cheap)
        printf("more than the %.0f%% RATE_MAX_COST allows\n", max_cost);
    return kept && limited && cheap ? 0 : 1;
}
