/* check.h: the sim suite's minimal test harness. A failed check prints where and exits 1; a
 * watchdog turns a deadlock into a failure instead of a hang. */
#ifndef SIM_CHECK_H
#define SIM_CHECK_H


#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simdev.h"

/* Exits without the exit handlers: NVIDIA's runtime synchronizes the device in its own, which
 * would wait forever for work a failed test left held on a stream. */
static inline void check_failed(void)
{
    fflush(NULL);
    _exit(1);
}

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);           \
            check_failed();                                                           \
        }                                                                             \
    } while (0)

#define CHECK_EQ(a, b)                                                                \
    do {                                                                              \
        long long a_ = (long long)(a), b_ = (long long)(b);                           \
        if (a_ != b_) {                                                               \
            fprintf(stderr, "FAIL %s:%d: %s == %s (%lld != %lld)\n", __FILE__, __LINE__, \
                    #a, #b, a_, b_);                                                  \
            check_failed();                                                           \
        }                                                                             \
    } while (0)

static void watchdog_fired(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: watchdog: the test deadlocked or took far too long\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(1);
}

/* Arms the watchdog and checks the simulated runtime (not a real one) answers. */
static inline void sim_begin(const char *expect)
{
    signal(SIGALRM, watchdog_fired);
    alarm(50);
    simdev_identify_fn id = (simdev_identify_fn)(uintptr_t)simdev_sym("simdev_identify");
    if (!id || strcmp(id(), expect) != 0) {
        fprintf(stderr, "FAIL: the %s stand-in did not answer (LD_LIBRARY_PATH?)\n", expect);
        exit(1);
    }
}

static inline struct simdev_counters sim_counters(int dev)
{
    simdev_get_counters_fn f =
        (simdev_get_counters_fn)(uintptr_t)simdev_sym("simdev_get_counters");
    struct simdev_counters c;
    CHECK(f != NULL);
    CHECK(f(dev, &c) == 0);
    return c;
}

/* The totals after a fault-injection run whose allocations were all freed: `ok` and
 * `async_ok` allocations made, `refused` attempts failed on purpose, each also out of memory. */
static inline void check_injected(uint64_t ok, uint64_t async_ok, uint64_t refused)
{
    struct simdev_counters c = sim_counters(-1);
    CHECK_EQ(c.malloc_calls, ok);
    CHECK_EQ(c.malloc_async_calls, async_ok);
    CHECK_EQ(c.injected_faults, refused);
    CHECK_EQ(c.oom, refused);
    CHECK_EQ(c.reserved_bytes, 0);
}

/* A flag a host function waits on: the host's handshake with a stream worker. */
struct gate {
    volatile int open, entered, done;
};

static inline void gate_wait(struct gate *g)
{
    __atomic_store_n(&g->entered, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&g->open, __ATOMIC_SEQ_CST))
        usleep(200);
    __atomic_store_n(&g->done, 1, __ATOMIC_SEQ_CST);
}

static inline void gate_open(struct gate *g)
{
    __atomic_store_n(&g->open, 1, __ATOMIC_SEQ_CST);
}

static inline int gate_flag(volatile int *f)
{
    return __atomic_load_n(f, __ATOMIC_SEQ_CST);
}

/* Redirects stderr to a temporary file; returns the saved descriptor. */
static inline int capture_stderr(FILE **tmp)
{
    fflush(stderr);
    *tmp = tmpfile();
    int saved = dup(2);
    dup2(fileno(*tmp), 2);
    return saved;
}

/* Restores stderr and returns how many captured lines contain `needle`. */
static inline int release_stderr(FILE *tmp, int saved, const char *needle)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    char line[1024];
    int n = 0;
    while (fgets(line, sizeof line, tmp)) {
        fputs(line, stderr);
        if (strstr(line, needle))
            n++;
    }
    fclose(tmp);
    return n;
}

/* Evaluates `expr` with stderr captured; checks it gave `want` and printed exactly one line
 * containing `needle`. The checks come after stderr is back, where a failure can be seen. */
#define CHECK_ONE_LINE(expr, want, needle)                                            \
    do {                                                                              \
        FILE *tmp_;                                                                   \
        int saved_ = capture_stderr(&tmp_);                                           \
        long long got_ = (long long)(expr);                                           \
        int lines_ = release_stderr(tmp_, saved_, needle);                            \
        CHECK_EQ(got_, want);                                                         \
        CHECK_EQ(lines_, 1);                                                          \
    } while (0)

/* One case of a program whose cases run one per process, since the simulator reads SIMDEV_*
 * once and a fault is sticky. */
struct sim_case {
    const char *name;
    void (*run)(void);
};

/* Runs the case argv[1] names; the exit status of the program. */
static inline int sim_run_case(const char *program, int argc, char **argv,
                               const struct sim_case *cases, size_t n)
{
    const char *which = argc > 1 ? argv[1] : "";
    for (size_t i = 0; i < n; i++)
        if (strcmp(which, cases[i].name) == 0) {
            cases[i].run();
            printf("%s %s: all passed\n", program, which);
            return 0;
        }
    fprintf(stderr, "FAIL: unknown case \"%s\"\n", which);
    return 1;
}

#endif
