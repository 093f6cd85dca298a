/* hip_faults.c: fault injection by environment, through the HIP stand-in. The first argument
 * names the case; meson runs each with its own SIMDEV_* settings (the core reads them once):
 *   nth     SIMDEV_FAIL_ALLOC_NTH=3
 *   rate    SIMDEV_FAIL_ALLOC_RATE=0.5 SIMDEV_FAIL_SEED=7
 *   events  SIMDEV_FAIL_EVENT_CREATE_RATE=0.3 SIMDEV_FAIL_EVENT_RECORD_RATE=0.3
 *   sync    SIMDEV_SYNC_DELAY_US=2000
 *   badenv  bad values of each kind
 * `pattern` is the rate case's allocation loop alone, for re-running it in a child. */
#include <hip/hip_runtime_api.h>
#include <sys/wait.h>

#include "check.h"

enum { ROUNDS = 200 };

/* The counters after `before`, if a call changed nothing but one injected refusal. */
static struct simdev_counters after_refusal(struct simdev_counters before)
{
    before.oom++;
    before.injected_faults++;
    return before;
}

static void nth(void)
{
    void *p[6];
    void *none = &none;
    p[0] = none;
    /* A zero-byte request never reaches the allocator: it is not an attempt. */
    CHECK_EQ(hipMalloc(&p[0], 0), hipSuccess);
    CHECK(p[0] == NULL);
    for (int i = 0; i < 6; i++) {
        struct simdev_counters before = sim_counters(0), want = after_refusal(before);
        size_t free_before, free_after, total;
        CHECK_EQ(hipMemGetInfo(&free_before, &total), hipSuccess);
        p[i] = none;
        hipError_t rc = hipMalloc(&p[i], 1000);
        CHECK_EQ(hipMemGetInfo(&free_after, &total), hipSuccess);
        if (i != 2) {
            CHECK_EQ(rc, hipSuccess);
            continue;
        }
        CHECK_EQ(rc, hipErrorOutOfMemory);
        CHECK(p[i] == none);
        CHECK_EQ(free_after, free_before);
        struct simdev_counters got = sim_counters(0);
        CHECK(memcmp(&got, &want, sizeof got) == 0);
        CHECK_EQ(hipGetLastError(), hipErrorOutOfMemory);
        CHECK_EQ(hipGetLastError(), hipSuccess);
    }
    /* Stream-ordered allocations count too, and nothing fails after the nth. */
    void *a;
    CHECK_EQ(hipMallocAsync(&a, 1000, 0), hipSuccess);
    CHECK_EQ(hipFreeAsync(a, 0), hipSuccess);
    for (int i = 0; i < 6; i++)
        if (i != 2)
            CHECK_EQ(hipFree(p[i]), hipSuccess);
    CHECK_EQ(hipDeviceSynchronize(), hipSuccess);
    check_injected(5, 1, 1);
}

/* ROUNDS hipMalloc/hipFree pairs; out[i] is '1' where the allocation failed. Returns the
 * number of failures. */
static int alloc_pattern(char out[ROUNDS + 1])
{
    int fails = 0;
    for (int i = 0; i < ROUNDS; i++) {
        void *p = NULL;
        hipError_t rc = hipMalloc(&p, 4096);
        CHECK(rc == hipSuccess || rc == hipErrorOutOfMemory);
        out[i] = rc == hipSuccess ? '0' : '1';
        if (rc == hipSuccess)
            CHECK_EQ(hipFree(p), hipSuccess);
        else
            fails++;
    }
    out[ROUNDS] = 0;
    return fails;
}

/* The failure pattern of a child running `pattern` with the current environment. */
static void child_pattern(char out[ROUNDS + 1])
{
    int fd[2];
    CHECK_EQ(pipe(fd), 0);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(fd[1], 1);
        execl("/proc/self/exe", "hip_faults", "pattern", (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    CHECK(f != NULL);
    CHECK(fgets(out, ROUNDS + 1, f) != NULL);
    CHECK_EQ(strlen(out), ROUNDS);
    fclose(f);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void rate(void)
{
    static char mine[ROUNDS + 1], again[ROUNDS + 1], other[ROUNDS + 1];
    int fails = alloc_pattern(mine);
    /* p = 0.5 over 200 draws: outside [50, 150] is over 7 standard deviations away. */
    CHECK(fails >= 50 && fails <= 150);
    hipStream_t s;
    CHECK_EQ(hipStreamCreate(&s), hipSuccess);
    int async_ok = 0;
    for (int i = 0; i < ROUNDS; i++) {
        void *p = NULL;
        hipError_t rc = hipMallocAsync(&p, 4096, s);
        CHECK(rc == hipSuccess || rc == hipErrorOutOfMemory);
        if (rc == hipSuccess) {
            async_ok++;
            CHECK_EQ(hipFreeAsync(p, s), hipSuccess);
        }
    }
    CHECK(async_ok > 0 && async_ok < ROUNDS);
    CHECK_EQ(hipStreamSynchronize(s), hipSuccess);
    CHECK_EQ(hipStreamDestroy(s), hipSuccess);
    check_injected(ROUNDS - fails, async_ok, fails + (ROUNDS - async_ok));

    /* The same seed fails the same calls in another run; another seed fails others. */
    child_pattern(again);
    CHECK(strcmp(mine, again) == 0);
    CHECK_EQ(setenv("SIMDEV_FAIL_SEED", "8", 1), 0);
    child_pattern(other);
    CHECK(strcmp(mine, other) != 0);
}

static void gate_cb(hipStream_t s, hipError_t st, void *g)
{
    (void)s;
    (void)st;
    gate_wait(g);
}

static void events(void)
{
    enum { N = 100, RECORDS = 3 };
    static hipEvent_t ev[N];
    static int recorded[N];
    hipStream_t s;
    CHECK_EQ(hipStreamCreate(&s), hipSuccess);
    int created = 0, create_fails = 0, record_fails = 0, records = 0;
    for (int i = 0; i < N; i++) {
        hipEvent_t e = NULL;
        hipError_t rc = hipEventCreate(&e);
        CHECK(rc == hipSuccess || rc == hipErrorOutOfMemory);
        if (rc != hipSuccess) {
            CHECK(e == NULL);
            create_fails++;
        } else {
            ev[created++] = e;
        }
    }
    CHECK(create_fails > 0 && create_fails < N);

    /* The stream is held, so an event that was recorded is not ready, and one whose every
     * record failed was never recorded: complete. */
    static struct gate g;
    CHECK_EQ(hipStreamAddCallback(s, gate_cb, &g, 0), hipSuccess);
    for (int i = 0; i < created; i++)
        for (int k = 0; k < RECORDS; k++) {
            hipError_t rc = hipEventRecord(ev[i], s);
            CHECK(rc == hipSuccess || rc == hipErrorOutOfMemory);
            if (rc == hipSuccess) {
                recorded[i] = 1;
                records++;
            } else {
                record_fails++;
            }
        }
    CHECK(record_fails > 0 && record_fails < created * RECORDS);
    /* An injected failure is not sticky: it is the last error once, then gone. */
    CHECK_EQ(hipGetLastError(), hipErrorOutOfMemory);
    CHECK_EQ(hipGetLastError(), hipSuccess);
    int any_recorded = 0;
    for (int i = 0; i < created; i++) {
        CHECK_EQ(hipEventQuery(ev[i]), recorded[i] ? hipErrorNotReady : hipSuccess);
        any_recorded |= recorded[i];
    }
    /* As in ROCm, a query that finds work pending leaves "not ready" as the last error. */
    CHECK_EQ(hipGetLastError(), any_recorded ? hipErrorNotReady : hipSuccess);
    CHECK_EQ(hipGetLastError(), hipSuccess);
    gate_open(&g);
    CHECK_EQ(hipStreamSynchronize(s), hipSuccess);
    for (int i = 0; i < created; i++) {
        CHECK_EQ(hipEventSynchronize(ev[i]), hipSuccess);
        CHECK_EQ(hipEventQuery(ev[i]), hipSuccess);
        CHECK_EQ(hipEventDestroy(ev[i]), hipSuccess);
    }
    CHECK_EQ(hipStreamDestroy(s), hipSuccess);
    void *p;
    CHECK_EQ(hipMalloc(&p, 4096), hipSuccess);
    CHECK_EQ(hipFree(p), hipSuccess);
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.injected_faults, create_fails + record_fails);
    CHECK_EQ(c.events_recorded, records);
    CHECK_EQ(c.oom, 0);
}

static volatile int ran;
static void set_ran(hipStream_t s, hipError_t st, void *arg)
{
    (void)s;
    (void)st;
    (void)arg;
    __atomic_store_n(&ran, 1, __ATOMIC_SEQ_CST);
}

/* A delay on every wait changes no result: only behaviour is checked, never time. */
static void sync_delay(void)
{
    hipStream_t s;
    hipEvent_t e;
    CHECK_EQ(hipStreamCreate(&s), hipSuccess);
    CHECK_EQ(hipEventCreate(&e), hipSuccess);
    CHECK_EQ(hipStreamAddCallback(s, set_ran, NULL, 0), hipSuccess);
    CHECK_EQ(hipStreamSynchronize(s), hipSuccess);
    CHECK(gate_flag((volatile int *)&ran));
    enum { N = 8192 };
    static unsigned char h[N], back[N];
    for (int i = 0; i < N; i++)
        h[i] = (unsigned char)(i * 7);
    void *d;
    CHECK_EQ(hipMalloc(&d, N), hipSuccess);
    CHECK_EQ(hipMemcpyAsync(d, h, N, hipMemcpyHostToDevice, s), hipSuccess);
    CHECK_EQ(hipMemcpyAsync(back, d, N, hipMemcpyDeviceToHost, s), hipSuccess);
    CHECK_EQ(hipEventRecord(e, s), hipSuccess);
    CHECK_EQ(hipEventSynchronize(e), hipSuccess);
    CHECK_EQ(hipEventQuery(e), hipSuccess);
    CHECK(memcmp(h, back, N) == 0);
    CHECK_EQ(hipDeviceSynchronize(), hipSuccess);
    CHECK_EQ(hipFree(d), hipSuccess);
    CHECK_EQ(hipEventDestroy(e), hipSuccess);
    CHECK_EQ(hipStreamDestroy(s), hipSuccess);
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.injected_faults, 0);
    CHECK_EQ(c.oom, 0);
    CHECK_EQ(c.reserved_bytes, 0);
}

/* Each bad value gives its one line and the default: nothing is injected. */
static void badenv(void)
{
    FILE *tmp;
    int saved = capture_stderr(&tmp);
    int dev;
    CHECK_EQ(hipGetDevice(&dev), hipSuccess);
    static const char *const lines[] = {
        "SIMDEV_FAIL_ALLOC_NTH=\"-2\"", "SIMDEV_FAIL_ALLOC_RATE=\"1.5\"",
        "SIMDEV_FAIL_EVENT_CREATE_RATE=\"often\"", "SIMDEV_FAIL_EVENT_RECORD_RATE=\"-0.1\"",
        "SIMDEV_FAIL_SEED=\"x1\"", "SIMDEV_SYNC_DELAY_US=\"-5\"",
    };
    enum { NLINES = sizeof lines / sizeof lines[0] };
    static char text[8192];
    fflush(stderr);
    rewind(tmp);
    text[fread(text, 1, sizeof text - 1, tmp)] = 0;
    CHECK_EQ(release_stderr(tmp, saved, "is not valid"), NLINES);
    for (size_t i = 0; i < NLINES; i++)
        CHECK(strstr(text, lines[i]) != NULL);
    for (int i = 0; i < 20; i++) {
        void *p;
        hipEvent_t e;
        CHECK_EQ(hipMalloc(&p, 512), hipSuccess);
        CHECK_EQ(hipEventCreate(&e), hipSuccess);
        CHECK_EQ(hipEventRecord(e, 0), hipSuccess);
        CHECK_EQ(hipEventSynchronize(e), hipSuccess);
        CHECK_EQ(hipEventDestroy(e), hipSuccess);
        CHECK_EQ(hipFree(p), hipSuccess);
    }
    CHECK_EQ(sim_counters(0).injected_faults, 0);
}

int main(int argc, char **argv)
{
    sim_begin("simdevice hip");
    const char *which = argc > 1 ? argv[1] : "";
    if (strcmp(which, "pattern") == 0) {
        static char out[ROUNDS + 1];
        alloc_pattern(out);
        printf("%s\n", out);
        return 0;
    }
    static const struct sim_case cases[] = {
        {"nth", nth}, {"rate", rate}, {"events", events}, {"sync", sync_delay}, {"badenv", badenv},
    };
    return sim_run_case("hip_faults", argc, argv, cases, sizeof cases / sizeof cases[0]);
}
