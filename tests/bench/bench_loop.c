/* Loops of cudaMalloc/cudaFree in a process that has created streams: what a cache costs when
 * every freed block must wait for the device. One binary, four modes: "plain" (the runtime
 * alone), "cache" (the same binary with libcachealloc.so preloaded), "sync" (--sync-cache:
 * the reference cache of sync_cache.c, which synchronizes the device before reusing a block)
 * and "limit" (--limit: each thread allocates once and only launches the memsets, the fastest
 * any allocator could run the loop). docs/benchmarks.md says what each printed figure means. */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "cachealloc.h"
#include "loop_streams.h"
#include "simdev.h"
#include "sync_cache.h"

#define MiB ((size_t)1 << 20)

typedef struct opts {
    int sync_cache, limit, random, threads, streams, busy, depth, work_us;
    unsigned long pairs, warmup; /* timed pairs in all; warm-up pairs per thread */
    size_t size, memset_bytes;
} opts;

typedef struct worker {
    const opts *o;
    int id;
    pthread_t thread;
    pthread_barrier_t *bar;
    void *held; /* --limit: the thread's one block, as large as any pair asks */
    unsigned long failures;
} worker;

static atomic_ulong live_bytes, peak_live_bytes;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* CPU seconds of every thread of the process, the simulator's stream workers included. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

static int alloc(const opts *o, void **p, size_t size)
{
    if (o->sync_cache)
        return sync_cache_alloc(p, size);
    return cudaMalloc(p, size) == cudaSuccess ? 0 : -1;
}

static int release(const opts *o, void *p)
{
    if (o->sync_cache)
        return sync_cache_free(p);
    return cudaFree(p) == cudaSuccess ? 0 : -1;
}

static void note_live(size_t size)
{
    unsigned long now = atomic_fetch_add(&live_bytes, size) + size;
    unsigned long peak = atomic_load(&peak_live_bytes);
    while (now > peak && !atomic_compare_exchange_weak(&peak_live_bytes, &peak, now))
        ;
}

/* One allocation, a tiny memset into it on the legacy stream (the block is used by the device
 * before its free), one free. */
static int pair(const opts *o, uint64_t *rng, void *held)
{
    size_t size = o->size;
    if (o->random) {
        *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17; /* xorshift64 */
        size = MiB + (size_t)(*rng % (7 * MiB + 1));
    }
    /* Live from the call that asks for it to the return of the call that frees it: what an
     * allocator must hold at once, whichever way the threads interleave inside it. */
    note_live(size);
    void *p = held;
    int rc = !held && (alloc(o, &p, size) != 0 || !p) ? -1 : 0;
    if (rc == 0) {
        if (o->memset_bytes)
            cudaMemsetAsync(p, 0, o->memset_bytes < size ? o->memset_bytes : size, 0);
        if (!held)
            rc = release(o, p);
    }
    atomic_fetch_sub(&live_bytes, size);
    return rc;
}

static void *run(void *arg)
{
    worker *w = arg;
    const opts *o = w->o;
    uint64_t rng = 0x9e3779b97f4a7c15ull * (uint64_t)(w->id + 1);
    unsigned long timed = o->pairs / (unsigned long)o->threads, warmup = o->warmup;
    if (o->limit && cudaMalloc(&w->held, o->random ? 8 * MiB : o->size) != cudaSuccess) {
        /* Without its block a pair would allocate: none runs, and the failure says so. */
        w->held = NULL;
        w->failures = 1;
        timed = warmup = 0;
    }
    for (unsigned long i = 0; i < warmup; i++)
        w->failures += pair(o, &rng, w->held) != 0;
    pthread_barrier_wait(w->bar); /* warm-up done: counters read */
    pthread_barrier_wait(w->bar); /* go */
    for (unsigned long i = 0; i < timed; i++)
        w->failures += pair(o, &rng, w->held) != 0;
    return NULL;
}

static int counters(struct simdev_counters *c)
{
    memset(c, 0, sizeof *c);
    simdev_get_counters_fn get =
        (simdev_get_counters_fn)(uintptr_t)simdev_sym("simdev_get_counters");
    return get != NULL && get(-1, c) == 0;
}

static int number(const char *s, unsigned long max, unsigned long *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v > max)
        return -1;
    *out = (unsigned long)v;
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench-loop [--sync-cache | --limit] [--sizes fixed|random]\n"
                    "  [--size BYTES] [--threads 1..64] [--pairs N] [--warmup N] [--streams N]\n"
                    "  [--busy N] [--depth N] [--work-us N] [--memset BYTES]\n");
    return 2;
}

static int parse(int argc, char **argv, opts *o)
{
    *o = (opts){.threads = 1, .streams = 2, .depth = 2, .work_us = 20, .pairs = 20000,
                .warmup = 1000, .size = MiB, .memset_bytes = 8};
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--sync-cache") == 0 || strcmp(opt, "--limit") == 0) {
            if (opt[2] == 's')
                o->sync_cache = 1;
            else
                o->limit = 1;
            continue;
        }
        if (i + 1 >= argc)
            return -1;
        const char *val = argv[++i];
        unsigned long v = 0;
        if (strcmp(opt, "--sizes") == 0) {
            if (strcmp(val, "fixed") && strcmp(val, "random"))
                return -1;
            o->random = strcmp(val, "random") == 0;
            continue;
        }
        if (number(val, 1ul << 40, &v) != 0)
            return -1;
        if (strcmp(opt, "--size") == 0 && v > 0)
            o->size = v;
        else if (strcmp(opt, "--threads") == 0 && v >= 1 && v <= 64)
            o->threads = (int)v;
        else if (strcmp(opt, "--pairs") == 0)
            o->pairs = v;
        else if (strcmp(opt, "--warmup") == 0)
            o->warmup = v;
        else if (strcmp(opt, "--streams") == 0 && v <= 64)
            o->streams = (int)v;
        else if (strcmp(opt, "--busy") == 0 && v <= 64)
            o->busy = (int)v;
        else if (strcmp(opt, "--depth") == 0 && v >= 1 && v <= 1024)
            o->depth = (int)v;
        else if (strcmp(opt, "--work-us") == 0 && v <= 1000000)
            o->work_us = (int)v;
        else if (strcmp(opt, "--memset") == 0 && v <= MiB)
            o->memset_bytes = v;
        else
            return -1;
    }
    return o->busy <= o->streams && !(o->sync_cache && o->limit) ? 0 : -1;
}

static const char *mode(const opts *o)
{
    if (o->sync_cache)
        return "sync";
    if (o->limit)
        return "limit";
    return dlsym(RTLD_DEFAULT, "cachealloc_get_stats_v1") ? "cache" : "plain";
}

static void report(const opts *o, double wall, double cpu, unsigned long timed,
                   const struct simdev_counters *c0, const struct simdev_counters *c1,
                   unsigned long host_fns)
{
    printf("mode=%s\nsizes=%s\nthreads=%d\nstreams=%d\nbusy_streams=%d\n", mode(o),
           o->random ? "random" : "fixed", o->threads, o->streams, o->busy);
    printf("pairs=%lu\nwarmup_pairs=%lu\nwall_s=%.6f\npairs_per_s=%.0f\n", timed,
           o->warmup * (unsigned long)o->threads, wall, wall > 0 ? (double)timed / wall : 0.0);
    printf("cpu_us_per_pair=%.2f\n", timed ? cpu * 1e6 / (double)timed : 0.0);
    printf("peak_live_bytes=%lu\nhost_functions=%lu\n", atomic_load(&peak_live_bytes),
           host_fns);
    if (o->sync_cache) /* beside the cache's: what the reference holds for the same loop */
        printf("sync_cache_reserved_bytes=%zu\n", sync_cache_reserved());
    cachealloc_stats cs;
    if (cachealloc_get_stats(0, &cs))
        printf("cache_peak_reserved_bytes=%" PRIu64 "\ncache_device_syncs=%" PRIu64 "\n",
               cs.peak_reserved_bytes, cs.device_syncs);
    if (!c1) {
        printf("simulator=absent\n");
        return;
    }
    uint64_t mallocs = c1->malloc_calls - c0->malloc_calls;
    printf("peak_reserved_bytes=%" PRIu64 "\n", c1->peak_reserved_bytes);
    printf("driver_mallocs=%" PRIu64 "\ndriver_mallocs_per_10k=%.2f\n", mallocs,
           timed ? (double)mallocs * 10000.0 / (double)timed : 0.0);
    printf("driver_frees=%" PRIu64 "\ndevice_syncs=%" PRIu64 "\n",
           c1->free_calls - c0->free_calls, c1->device_syncs - c0->device_syncs);
    printf("device_syncs_per_10k=%.2f\n",
           timed ? (double)(c1->device_syncs - c0->device_syncs) * 10000.0 / (double)timed
                 : 0.0);
    /* The fences' share of the pairs' driver calls (the memsets record none). */
    printf("events_recorded_per_10k=%.2f\nstream_waits_per_10k=%.2f\n",
           timed ? (double)(c1->events_recorded - c0->events_recorded) * 10000.0 / (double)timed
                 : 0.0,
           timed ? (double)(c1->stream_waits - c0->stream_waits) * 10000.0 / (double)timed : 0.0);
    printf("total_driver_mallocs=%" PRIu64 "\n", c1->malloc_calls);
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(argc, argv, &o) != 0)
        return usage();
    cudaFree(NULL); /* the context, outside every measurement */
    loop_streams *ls = loop_streams_start(o.streams, o.busy, o.depth, o.work_us);
    if (!ls) {
        fprintf(stderr, "bench-loop: cannot create %d streams\n", o.streams);
        return 1;
    }
    struct simdev_counters c0, c1;
    int on_sim = counters(&c0); /* on the simulator? The baseline is read after the warm-up */
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)o.threads + 1);
    worker *ws = calloc((size_t)o.threads, sizeof *ws);
    if (!ws)
        return 1;
    for (int i = 0; i < o.threads; i++) {
        ws[i] = (worker){.o = &o, .id = i, .bar = &bar};
        if (pthread_create(&ws[i].thread, NULL, run, &ws[i]) != 0) {
            fprintf(stderr, "bench-loop: cannot start thread %d\n", i);
            return 1;
        }
    }
    pthread_barrier_wait(&bar);
    counters(&c0);
    double t0 = now_s(), cpu0 = cpu_s();
    pthread_barrier_wait(&bar);
    unsigned long failures = 0;
    for (int i = 0; i < o.threads; i++) {
        pthread_join(ws[i].thread, NULL);
        failures += ws[i].failures;
    }
    counters(&c1);
    /* Work the loop left queued is paid for; the busy streams are stopped first. */
    unsigned long host_fns = loop_streams_stop(ls);
    cudaDeviceSynchronize();
    double wall = now_s() - t0, cpu = cpu_s() - cpu0;
    unsigned long timed = o.pairs / (unsigned long)o.threads * (unsigned long)o.threads;
    report(&o, wall, cpu, timed, &c0, on_sim ? &c1 : NULL, host_fns);
    printf("failures=%lu\n", failures);
    if (o.sync_cache)
        sync_cache_release_all();
    for (int i = 0; i < o.threads; i++)
        cudaFree(ws[i].held);
    free(ws);
    pthread_barrier_destroy(&bar);
    return failures ? 1 : 0;
}
