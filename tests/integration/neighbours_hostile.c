/* Neighbours that cannot or do not answer (issue 37, docs/security.md "Who may ask a process to
 * reclaim"). On one simulated device shared by several processes under the cache, an asker is
 * refused and asks its neighbours while one of them is stopped (SIGSTOP), one is killed during
 * its reclaim, and one's statistics segment is overwritten, field by field and then at random.
 * Every round of asking must end within the asker's bound (CA_NEIGHBOURS_WAIT_MS plus
 * HOSTILE_SLACK_MS, 500, for a loaded machine), the well-behaved neighbours must still answer
 * (their segments count what they gave), the asker must never crash, and at the end every
 * surviving neighbour's live block must hold what it wrote.
 *
 * Phases, each with the two good neighbours' caches filled again first:
 *   stopped    one neighbour is stopped; the asker asks for more than the device has free, as
 *              much as the good ones hold; then, the stopped one stopped for over a second,
 *              asks again; the stopped one is continued.
 *   killed     a neighbour's reclaim waits for its device (memory freed behind a 4 s host
 *              function on a stream of its own); while that reclaim is under way, it is
 *              killed (SIGKILL).
 *   corrupted  a neighbour's segment is overwritten: its magic, its version, its counts, its
 *              pid, its beat, its answer words, then 20 times 64 random bytes of its header;
 *              the asker asks after each.
 * Run with CACHEALLOC_STATS=1 and a private CACHEALLOC_SHM_DIR; the device is shared under a
 * SIMDEV_SHARED name of the test's own. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"
#include "stats/neighbours.h"
#include "stats/abi.h"

#define MIB ((uint64_t)1 << 20)
#define LIVE (16 * MIB)    /* each neighbour's live block */
#define CACHED (160 * MIB) /* what each caches free */

struct child {
    pid_t pid;
    int cmd, reply;
    const char *name;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void put(int fd, const void *p, size_t n)
{
    if (write(fd, p, n) != (ssize_t)n)
        exit(2);
}

static void get(int fd, void *p, size_t n)
{
    if (read(fd, p, n) != (ssize_t)n)
        exit(2);
}

/* ---- the children ---- */

static void *live;

/* CACHED bytes allocated in four pieces, written, freed: the cache holds them free. */
static void fill_cache(void)
{
    void *p[4];
    for (int i = 0; i < 4; i++) {
        CHECK(gpuMalloc(&p[i], CACHED / 4));
        CHECK(gpuMemset(p[i], 0, CACHED / 4));
    }
    for (int i = 0; i < 4; i++)
        CHECK(gpuFree(p[i]));
    CHECK(gpuDeviceSynchronize());
}

static bool live_kept(void)
{
    unsigned char b[3] = {0, 0, 0};
    CHECK(gpuMemcpy(&b[0], live, 1, gpuMemcpyDefault));
    CHECK(gpuMemcpy(&b[1], (char *)live + LIVE / 2, 1, gpuMemcpyDefault));
    CHECK(gpuMemcpy(&b[2], (char *)live + LIVE - 1, 1, gpuMemcpyDefault));
    return b[0] == 0x6E && b[1] == 0x6E && b[2] == 0x6E;
}

/* A neighbour: a live block and a full cache, then commands: 'f' fill the cache again, 'p'
 * free CACHED more behind a 4 s host function on a stream of its own (its memory pending, a
 * reclaim waits for the device), 'q' check the live block and leave (exit 0: it is intact). */
static int neighbour(int cmd, int reply)
{
    CHECK(gpuMalloc(&live, LIVE));
    CHECK(gpuMemset(live, 0x6E, LIVE));
    fill_cache();
    for (;;) {
        char c = 'k';
        put(reply, &c, 1);
        get(cmd, &c, 1);
        if (c == 'f') {
            fill_cache();
        } else if (c == 'p') {
            gpuStream_t s;
            void *p = NULL;
            CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
            CHECK(gpuMalloc(&p, CACHED));
            CHECK(gpu_host_sleep(s, 4000));
            CHECK(gpuMemsetAsync(p, 0, CACHED, s));
            CHECK(gpuFree(p)); /* waits for the stream to pass it before reuse */
        } else {
            return live_kept() ? 0 : 1;
        }
    }
}

/* The asker: 'a' and a size, answered with whether it was served and the call's time. */
static int asker(int cmd, int reply)
{
    for (;;) {
        char c;
        get(cmd, &c, 1);
        if (c != 'a')
            return 0;
        uint64_t n, out[2];
        get(cmd, &n, sizeof n);
        void *p = NULL;
        uint64_t t0 = now_ns();
        gpuError_t e = gpuMalloc(&p, n);
        out[1] = now_ns() - t0;
        out[0] = e == gpuSuccess;
        if (e == gpuSuccess) {
            CHECK(gpuMemset(p, 0, 1));
            CHECK(gpuFree(p));
        }
        (void)gpuGetLastError();
        put(reply, out, sizeof out);
    }
}

static struct child start(const char *name, int (*body)(int, int))
{
    int cmd[2], reply[2];
    if (pipe(cmd) != 0 || pipe(reply) != 0)
        exit(2);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        exit(2);
    if (pid == 0) {
        close(cmd[1]);
        close(reply[0]);
        _exit(body(cmd[0], reply[1]));
    }
    close(cmd[0]);
    close(reply[1]);
    struct child k = {pid, cmd[1], reply[0], name};
    if (body == neighbour) {
        char c;
        get(k.reply, &c, 1); /* ready: its live block and cache in place */
    }
    return k;
}

static void tell(struct child *k, char c)
{
    put(k->cmd, &c, 1);
    if (c != 'q') {
        get(k->reply, &c, 1);
    }
}

/* ---- the parent ---- */

static uint64_t capacity, bound_ns;
static int failures;

static void segment_path(pid_t pid, char *out, size_t len)
{
    snprintf(out, len, "%s/" CA_STATS_NAME_PREFIX "%u.%d", getenv(CA_STATS_DIR_ENV),
             (unsigned)geteuid(), (int)pid);
}

/* What a neighbour's segment says it gave to neighbours on device 0. */
static uint64_t given(const struct child *k)
{
    char path[4096];
    segment_path(k->pid, path, sizeof path);
    uint64_t v = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0 || pread(fd, &v, sizeof v, sizeof(ca_stats_header) +
                                            offsetof(ca_stats_record, given_bytes)) != sizeof v)
        v = 0;
    if (fd >= 0)
        close(fd);
    return v;
}

/* The device's free memory: the simulator's shared table. */
static uint64_t device_free(void)
{
    struct simdev_shared_slot slots[SIMDEV_SHARED_SLOTS];
    char path[256];
    snprintf(path, sizeof path, "/dev/shm/simdev.%u.%s", (unsigned)getuid(),
             getenv("SIMDEV_SHARED"));
    int fd = open(path, O_RDONLY);
    EXPECT(fd >= 0 && pread(fd, slots, sizeof slots, 0) == (ssize_t)sizeof slots);
    close(fd);
    uint64_t used = 0;
    for (int s = 0; s < SIMDEV_SHARED_SLOTS; s++)
        if (slots[s].pid != 0 && kill((pid_t)slots[s].pid, 0) == 0)
            used += slots[s].used[0];
    return used < capacity ? capacity - used : 0;
}

/* The asker asks for n bytes: whether it was served; the round must end within the bound. */
static bool ask(struct child *a, uint64_t n, const char *what)
{
    char c = 'a';
    uint64_t out[2];
    put(a->cmd, &c, 1);
    put(a->cmd, &n, sizeof n);
    get(a->reply, out, sizeof out);
    bool in_time = out[1] <= bound_ns;
    printf("%s: %" PRIu64 " MiB %s in %.1f ms (bound %.0f ms)\n", what, n / MIB,
           out[0] ? "served" : "refused", (double)out[1] / 1e6, (double)bound_ns / 1e6);
    if (!in_time)
        failures++;
    return out[0] != 0;
}

static void expect(bool ok, const char *what)
{
    printf("%s: %s\n", what, ok ? "yes" : "NO");
    if (!ok)
        failures++;
}

static void corrupt(const struct child *k, size_t off, const void *bytes, size_t n)
{
    char path[4096];
    segment_path(k->pid, path, sizeof path);
    int fd = open(path, O_WRONLY);
    EXPECT(fd >= 0 && pwrite(fd, bytes, n, (off_t)off) == (ssize_t)n);
    close(fd);
}

#define FIELD(f) offsetof(ca_stats_header, f), sizeof(((ca_stats_header *)0)->f)

int main(void)
{
    gpu_own_stats_dir();
    char table[128];
    gpu_share_device("neighbours-hostile", table, sizeof table);
    const char *mem = getenv("SIMDEV_MEMORY");
    char *unit = NULL;
    capacity = mem ? strtoull(mem, &unit, 10) : 8;
    capacity <<= !mem || *unit == 'G' ? 30 : *unit == 'M' ? 20 : 0;
    const char *slack = getenv("HOSTILE_SLACK_MS");
    bound_ns = (CA_NEIGHBOURS_WAIT_MS + (slack ? strtoull(slack, NULL, 10) : 500)) * 1000000ull;
    struct child a = start("asker", asker);
    struct child g1 = start("good 1", neighbour), g2 = start("good 2", neighbour);
    struct child s = start("stopped", neighbour);

    /* Stopped: the good ones hold what the asker needs beyond the device's free memory. */
    EXPECT(kill(s.pid, SIGSTOP) == 0);
    uint64_t g0 = given(&g1) + given(&g2);
    expect(ask(&a, device_free() + 2 * CACHED - 32 * MIB, "stopped: more than the device has free"),
           "stopped: served with what the good neighbours held");
    expect(given(&g1) + given(&g2) >= g0 + 2 * CACHED,
           "stopped: the good neighbours gave all they held");
    sleep_ms(1200);
    ask(&a, capacity, "stopped for a second: the whole device");
    EXPECT(kill(s.pid, SIGCONT) == 0);

    /* Killed during its reclaim: once its request is pending, with its reclaim waiting for
     * its stream's host function. */
    tell(&g1, 'f');
    tell(&g2, 'f');
    struct child k = start("killed", neighbour);
    uint64_t t0 = now_ns();
    tell(&k, 'p');
    /* Its free returned at once, the memory pending behind the host function. */
    expect(now_ns() - t0 < 2000000000ull, "killed: its memory pending on its stream");
    g0 = given(&g1) + given(&g2);
    char c = 'a';
    uint64_t n = device_free() + 2 * CACHED - 32 * MIB, out[2];
    put(a.cmd, &c, 1);
    put(a.cmd, &n, sizeof n);
    char path[4096];
    segment_path(k.pid, path, sizeof path);
    bool killed = false;
    for (int i = 0; i < 2000 && !killed; i++) {
        ca_stats_header h;
        int fd = open(path, O_RDONLY);
        bool pending = fd >= 0 && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
                       CA_STATS_RECLAIM_SEQ(h.reclaim_request) != h.reclaim_done;
        if (fd >= 0)
            close(fd);
        if (pending) {
            sleep_ms(100); /* well into its reclaim, which waits 4 s for the device */
            killed = kill(k.pid, SIGKILL) == 0;
        }
        sleep_ms(1);
    }
    int st = 0;
    EXPECT(waitpid(k.pid, &st, 0) == k.pid);
    get(a.reply, out, sizeof out);
    printf("killed during its reclaim: %" PRIu64 " MiB %s in %.1f ms (bound %.0f ms)\n", n / MIB,
           out[0] ? "served" : "refused", (double)out[1] / 1e6, (double)bound_ns / 1e6);
    if (out[1] > bound_ns)
        failures++;
    expect(killed && WIFSIGNALED(st), "killed: the neighbour was killed during its reclaim");
    expect(given(&g1) + given(&g2) > g0, "killed: the good neighbours still answered");

    /* Corrupted: a neighbour's segment overwritten, the asker asking after each change. */
    struct child x = start("corrupted", neighbour);
    const uint32_t big = 0xFFFFFFFFu, seven = 7;
    const uint64_t ones = UINT64_MAX, self = (uint64_t)a.pid, one = 1;
    const struct {
        const char *what;
        size_t off, len;
        const void *bytes;
    } cases[] = {
        {"its version", FIELD(abi_version), &big},
        {"its header size", FIELD(header_size), &seven},
        {"its record count", FIELD(device_capacity), &big},
        {"its pid, the asker's", FIELD(pid), &self},
        {"its pid, init's", FIELD(pid), &one},
        {"its beat, in the future", FIELD(heartbeat_ns), &ones},
        {"its answer, done", FIELD(reclaim_done), &ones},
        {"its answer's bytes", FIELD(reclaim_bytes), &ones},
        {"its request", FIELD(reclaim_request), &ones},
        {"its magic", FIELD(magic), &one},
    };
    /* Each case and each random round starts from a copy of the good header. */
    ca_stats_header good;
    segment_path(x.pid, path, sizeof path);
    int fd = open(path, O_RDONLY);
    EXPECT(fd >= 0 && pread(fd, &good, sizeof good, 0) == (ssize_t)sizeof good);
    close(fd);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        corrupt(&x, cases[i].off, cases[i].bytes, cases[i].len);
        char what[96];
        snprintf(what, sizeof what, "corrupted, %s", cases[i].what);
        ask(&a, capacity, what);
        corrupt(&x, 0, &good, sizeof good);
    }
    uint64_t seed = 37;
    for (int round = 0; round < 20; round++) {
        for (int j = 0; j < 64; j++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            unsigned char junk = (unsigned char)(seed >> 56);
            corrupt(&x, (size_t)(seed >> 20) % sizeof good, &junk, 1);
        }
        char what[64];
        snprintf(what, sizeof what, "corrupted at random, round %d", round);
        ask(&a, capacity, what);
        corrupt(&x, 0, &good, sizeof good);
    }

    /* Every survivor's live block intact; the asker still there. */
    struct child *all[] = {&g1, &g2, &s, &x, &a};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        tell(all[i], 'q');
        EXPECT(waitpid(all[i]->pid, &st, 0) == all[i]->pid);
        char what[96];
        snprintf(what, sizeof what, "%s: ran to its end, %s", all[i]->name,
                 all[i] == &a ? "never crashed" : "its live block intact");
        expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, what);
    }
    unlink(table);
    return failures ? 1 : 0;
}
