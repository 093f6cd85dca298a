/* Hot-path microbenchmark of the arena: cache-hit allocate+free pairs of one size on one
 * stream, in-process over a device that costs nothing (bump_backend), so the figure is the
 * arena's own cost per pair. Prints key=value lines; exits 1 when any call failed or a pair
 * that should have been a cache hit went to the driver.
 *
 *   bench-hotpath [--api plain|async] [--threads T] [--pairs N] [--runs R] [--size BYTES]
 *
 * Instruction counts come from running it under callgrind with N and 2N pairs and one run
 * (scripts/bench.sh does that): the difference divided by N is the cost of one pair, with the
 * set-up cancelled out. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena/arena.h"
#include "bump_backend.h"
#include "options/options.h"

#define MAX_THREADS 64

typedef struct bench_args {
    unsigned api;
    int threads;
    uint64_t pairs;
    int runs;
    size_t size;
} bench_args;

typedef struct worker {
    pthread_t tid;
    ca_arena *arena;
    const bench_args *args;
    ca_stream_t stream;
    pthread_barrier_t *start;
    uint64_t elapsed_ns;
    uint64_t failures;
} worker;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t run_pairs(ca_arena *a, const bench_args *args, ca_stream_t s, uint64_t n)
{
    uint64_t failures = 0;
    for (uint64_t i = 0; i < n; i++) {
        void *p = NULL;
        if (ca_malloc(a, 0, args->size, s, args->api, &p) != CA_OK || p == NULL) {
            failures++;
            continue;
        }
        if (ca_free(a, p, s, args->api, NULL) != CA_OK)
            failures++;
    }
    return failures;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->start);
    uint64_t t0 = now_ns();
    w->failures += run_pairs(w->arena, w->args, w->stream, w->args->pairs);
    w->elapsed_ns = now_ns() - t0;
    return NULL;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench-hotpath [--api plain|async] [--threads 1..%d] [--pairs N] "
                    "[--runs R] [--size BYTES]\n", MAX_THREADS);
    return 2;
}

static int parse_args(int argc, char **argv, bench_args *b)
{
    *b = (bench_args){.api = CA_API_PLAIN, .threads = 1, .pairs = 1000000, .runs = 5,
                      .size = 4096};
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (i + 1 >= argc)
            return -1;
        const char *val = argv[++i];
        uint64_t v = 0;
        if (strcmp(opt, "--api") == 0) {
            if (strcmp(val, "plain") == 0)
                b->api = CA_API_PLAIN;
            else if (strcmp(val, "async") == 0)
                b->api = CA_API_ASYNC;
            else
                return -1;
            continue;
        }
        if (parse_u64(val, &v) != 0)
            return -1;
        if (strcmp(opt, "--threads") == 0 && v >= 1 && v <= MAX_THREADS)
            b->threads = (int)v;
        else if (strcmp(opt, "--pairs") == 0 && v >= 1)
            b->pairs = v;
        else if (strcmp(opt, "--runs") == 0 && v >= 1 && v <= 1000)
            b->runs = (int)v;
        else if (strcmp(opt, "--size") == 0 && v >= 1 && v <= ((uint64_t)1 << 40))
            b->size = (size_t)v;
        else
            return -1;
    }
    return 0;
}

/* One timed run: every thread does args->pairs pairs at once. Returns wall-clock ns; *thread_ns
 * gets the mean of the threads' own elapsed times. */
static uint64_t timed_run(worker *w, const bench_args *args, uint64_t *thread_ns,
                          uint64_t *failures)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)args->threads + 1);
    for (int t = 0; t < args->threads; t++) {
        w[t].start = &start;
        w[t].elapsed_ns = 0;
        if (pthread_create(&w[t].tid, NULL, worker_main, &w[t]) != 0) {
            fprintf(stderr, "bench-hotpath: cannot start thread %d\n", t);
            exit(1);
        }
    }
    uint64_t t0 = now_ns();
    pthread_barrier_wait(&start);
    uint64_t sum = 0;
    for (int t = 0; t < args->threads; t++) {
        pthread_join(w[t].tid, NULL);
        sum += w[t].elapsed_ns;
        *failures += w[t].failures;
        w[t].failures = 0;
    }
    uint64_t wall = now_ns() - t0;
    pthread_barrier_destroy(&start);
    *thread_ns = sum / (uint64_t)args->threads;
    return wall;
}

int main(int argc, char **argv)
{
    bench_args args;
    if (parse_args(argc, argv, &args) != 0)
        return usage();

    bump_device dev;
    ca_backend be;
    bump_init(&dev, &be);
    ca_options opts;
    ca_options_defaults(&opts);
    ca_config cfg;
    ca_options_to_config(&opts, &cfg);
    cfg.quiet = 1;
    ca_arena *a = ca_arena_create(&be, &cfg);
    if (a == NULL) {
        fprintf(stderr, "bench-hotpath: cannot create the arena\n");
        return 1;
    }

    worker w[MAX_THREADS];
    memset(w, 0, sizeof w);
    uint64_t failures = 0;
    for (int t = 0; t < args.threads; t++) {
        w[t].arena = a;
        w[t].args = &args;
        /* Plain API: every thread on the legacy stream, as cudaMalloc users are. Async: one
         * stream per thread, as a program with a stream per worker has. */
        w[t].stream = args.api == CA_API_ASYNC ? (ca_stream_t)(uintptr_t)(0x1000 + 16 * t)
                                               : CA_STREAM_LEGACY;
        if (args.api == CA_API_ASYNC)
            ca_stream_created(a, 0, w[t].stream, 0);
        /* Warm-up: the first pair takes a segment from the driver; later ones must not. */
        failures += run_pairs(a, &args, w[t].stream, 1);
    }

    uint64_t best_wall = UINT64_MAX, best_thread = UINT64_MAX;
    for (int r = 0; r < args.runs; r++) {
        uint64_t thread_ns = 0;
        uint64_t wall = timed_run(w, &args, &thread_ns, &failures);
        if (wall < best_wall)
            best_wall = wall;
        if (thread_ns < best_thread)
            best_thread = thread_ns;
    }

    ca_dev_stats st;
    memset(&st, 0, sizeof st);
    ca_get_stats(a, 0, &st);
    uint64_t total = args.pairs * (uint64_t)args.runs * (uint64_t)args.threads +
                     (uint64_t)args.threads;
    printf("api=%s threads=%d size=%zu pairs=%" PRIu64 " runs=%d\n",
           args.api == CA_API_ASYNC ? "async" : "plain", args.threads, args.size, args.pairs,
           args.runs);
    /* Aggregate: wall time over every pair of every thread (throughput). Per thread: what one
     * thread saw per pair while the others ran (latency under contention). */
    printf("best_ns_per_pair=%.1f\n",
           (double)best_wall / (double)(args.pairs * (uint64_t)args.threads));
    printf("best_ns_per_pair_per_thread=%.1f\n", (double)best_thread / (double)args.pairs);
    printf("alloc_calls=%" PRIu64 " cache_hits=%" PRIu64 " driver_alloc_calls=%" PRIu64
           " failures=%" PRIu64 "\n", st.alloc_calls, st.cache_hits, st.driver_alloc_calls,
           failures);
    ca_arena_destroy(a);

    int ok = failures == 0 && st.alloc_calls == total &&
             st.driver_alloc_calls <= (uint64_t)args.threads &&
             st.cache_hits + st.driver_alloc_calls >= total;
    if (!ok)
        fprintf(stderr, "bench-hotpath: FAILED: expected %" PRIu64 " allocations, all but at "
                        "most %d of them cache hits, no failures\n", total, args.threads);
    return ok ? 0 : 1;
}
