#include "replay_core.h"

#include "cachealloc.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simdev.h"
#include "trace_csv.h"

typedef struct replay_result {
    uint64_t allocs, frees, alloc_failures, free_failures;
    uint64_t live_bytes, peak_live_bytes;
    double wall_s;
} replay_result;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The simulator's totals, or 0 when not running on it (a real GPU). */
static int read_counters(struct simdev_counters *c)
{
    memset(c, 0, sizeof *c);
    simdev_get_counters_fn get =
        (simdev_get_counters_fn)(uintptr_t)simdev_sym("simdev_get_counters");
    return get != NULL && get(-1, c) == 0;
}

/* The replay loop: only allocator calls and the optional memsets are timed. The final device
 * synchronization is inside the window, so work the cache leaves queued is paid for. */
static void replay(const trace *t, const replay_allocator *al, size_t memset_bytes, void **ptrs,
                   replay_result *r, struct simdev_counters *before_sync)
{
    double t0 = now_s();
    for (size_t i = 0; i < t->n; i++) {
        const trace_event *e = &t->ev[i];
        if (e->kind == 'A') {
            void *p = NULL;
            if (al->alloc(al->ctx, &p, (size_t)e->size) != 0 || (p == NULL && e->size > 0)) {
                r->alloc_failures++;
                ptrs[e->id] = NULL;
                continue;
            }
            ptrs[e->id] = p;
            r->allocs++;
            r->live_bytes += e->size;
            if (r->live_bytes > r->peak_live_bytes)
                r->peak_live_bytes = r->live_bytes;
            if (memset_bytes > 0 && p != NULL)
                cudaMemsetAsync(p, 0, memset_bytes < e->size ? memset_bytes : (size_t)e->size, 0);
        } else {
            void *p = ptrs[e->id];
            if (p == NULL && e->size > 0)
                continue;  /* its allocation failed: already counted */
            ptrs[e->id] = NULL;
            if (al->free(al->ctx, p) != 0)
                r->free_failures++;
            else
                r->frees++;
            r->live_bytes -= e->size;
        }
    }
    read_counters(before_sync);
    cudaDeviceSynchronize();
    r->wall_s = now_s() - t0;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-' || v > (1u << 20))
        return -1;
    *out = (size_t)v;
    return 0;
}

static int usage(const replay_allocator *al)
{
    fprintf(stderr, "usage: replay TRACE.csv [--memset BYTES (0..1048576)] [--passes N (1..100)]%s\n",
            al->usage_extra ? al->usage_extra : "");
    return 2;
}

/* Driver calls and device synchronizations between two counter readings. */
typedef struct calls {
    uint64_t mallocs, frees, maps, unmaps, syncs;
} calls;

static void add_calls(calls *c, const struct simdev_counters *from, const struct simdev_counters *to)
{
    c->mallocs += to->malloc_calls - from->malloc_calls;
    c->frees += to->free_calls - from->free_calls;
    c->maps += to->maps - from->maps;
    c->unmaps += to->unmaps - from->unmaps;
    c->syncs += to->device_syncs - from->device_syncs;
}

static void print_calls(const char *prefix, const calls *c)
{
    printf("%s_driver_mallocs=%" PRIu64 "\n%s_driver_frees=%" PRIu64 "\n%s_maps=%" PRIu64
           "\n%s_unmaps=%" PRIu64 "\n%s_device_syncs=%" PRIu64 "\n", prefix, c->mallocs, prefix,
           c->frees, prefix, c->maps, prefix, c->unmaps, prefix, c->syncs);
}

/* Frees what a pass of the trace left live, as the next training step would find it. */
static void free_leftovers(const trace *t, const replay_allocator *al, void **ptrs)
{
    for (uint32_t id = 0; id < t->nallocs; id++)
        if (ptrs[id]) {
            al->free(al->ctx, ptrs[id]);
            ptrs[id] = NULL;
        }
}

static const char *mode_name(const replay_allocator *al)
{
    if (al->name)
        return al->name;
    return dlsym(RTLD_DEFAULT, "cachealloc_get_stats_v1") ? "cache" : "plain";
}

static void print_result(const replay_allocator *al, const char *path, const trace *t,
                         size_t memset_bytes, const replay_result *r,
                         const struct simdev_counters *base, const struct simdev_counters *end,
                         int on_sim)
{
    printf("mode=%s\ntrace=%s\nmemset_bytes=%zu\n", mode_name(al), path, memset_bytes);
    printf("events=%zu\nallocs=%" PRIu64 "\nfrees=%" PRIu64 "\n", t->n, r->allocs, r->frees);
    printf("skipped_frees=%zu\nalloc_failures=%" PRIu64 "\nfree_failures=%" PRIu64 "\n",
           t->unmatched_frees, r->alloc_failures, r->free_failures);
    printf("wall_s=%.6f\npeak_live_bytes=%" PRIu64 "\n", r->wall_s, r->peak_live_bytes);
    /* The cache's own figures, where it is loaded: all a real GPU can tell of the driver. */
    cachealloc_stats cs;
    if (cachealloc_get_stats(0, &cs))
        printf("cache_peak_reserved_bytes=%" PRIu64 "\ncache_driver_allocs=%" PRIu64
               "\ncache_driver_frees=%" PRIu64 "\ncache_device_syncs=%" PRIu64
               "\ncache_oom_recoveries=%" PRIu64 "\n",
               cs.peak_reserved_bytes, cs.driver_alloc_calls, cs.driver_free_calls,
               cs.device_syncs, cs.oom_recoveries);
    if (!on_sim) {
        printf("simulator=absent\n");
        return;
    }
    /* Deltas over the replay (context creation excluded); the final synchronization the
     * replay itself makes is excluded from device_syncs. */
    printf("driver_mallocs=%" PRIu64 "\ndriver_frees=%" PRIu64 "\ndevice_syncs=%" PRIu64 "\n",
           end->malloc_calls - base->malloc_calls, end->free_calls - base->free_calls,
           end->device_syncs - base->device_syncs);
    /* Expandable segments: physical pages created, mapped and unmapped. */
    printf("vmm_creates=%" PRIu64 "\nvmm_maps=%" PRIu64 "\nvmm_unmaps=%" PRIu64 "\n",
           end->vmm_creates - base->vmm_creates, end->maps - base->maps,
           end->unmaps - base->unmaps);
    printf("peak_reserved_bytes=%" PRIu64 "\n", end->peak_reserved_bytes);
    double frag = end->peak_reserved_bytes
                      ? 1.0 - (double)r->peak_live_bytes / (double)end->peak_reserved_bytes
                      : 0.0;
    printf("fragmentation=%.4f\n", frag);
}

int replay_main(int argc, char **argv, const replay_allocator *al)
{
    const char *path = NULL;
    size_t memset_bytes = 0, passes = 1;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) != 0) {
            if (path)
                return usage(al);
            path = argv[i];
            continue;
        }
        if (i + 1 >= argc)
            return usage(al);
        const char *opt = argv[i], *val = argv[++i];
        if (strcmp(opt, "--memset") == 0) {
            if (parse_size(val, &memset_bytes) != 0)
                return usage(al);
        } else if (strcmp(opt, "--passes") == 0) {
            if (parse_size(val, &passes) != 0 || passes < 1 || passes > 100)
                return usage(al);
        } else if (!al->option || al->option(al->ctx, opt, val) != 0) {
            return usage(al);
        }
    }
    if (!path)
        return usage(al);

    trace t;
    if (trace_load(path, &t, stderr) != 0)
        return 2;
    void **ptrs = calloc(t.nallocs ? t.nallocs : 1, sizeof *ptrs);
    if (!ptrs) {
        trace_free(&t);
        fprintf(stderr, "replay: out of memory\n");
        return 2;
    }
    /* Create the context outside the timed window, as a program has before its first
     * allocation. */
    cudaFree(NULL);
    if (al->setup && al->setup(al->ctx) != 0) {
        free(ptrs);
        trace_free(&t);
        return 2;
    }
    struct simdev_counters base, end;
    int on_sim = read_counters(&base);
    replay_result r;
    memset(&r, 0, sizeof r);
    replay(&t, al, memset_bytes, ptrs, &r, &end);
    /* Later passes in the same process: what a warm cache still asks of the driver (each
     * pass's own final synchronization excluded, as for the first). */
    calls after1 = {0}, after2 = {0};
    uint64_t later_failures = 0;
    for (size_t pass = 1; pass < passes; pass++) {
        free_leftovers(&t, al, ptrs);
        struct simdev_counters start, stop;
        read_counters(&start);
        replay_result rp;
        memset(&rp, 0, sizeof rp);
        replay(&t, al, memset_bytes, ptrs, &rp, &stop);
        later_failures += rp.alloc_failures + rp.free_failures;
        add_calls(&after1, &start, &stop);
        if (pass >= 2)
            add_calls(&after2, &start, &stop);
    }
    print_result(al, path, &t, memset_bytes, &r, &base, &end, on_sim);
    if (passes > 1) {
        struct simdev_counters last;
        read_counters(&last);
        printf("passes=%zu\nlater_failures=%" PRIu64 "\n", passes, later_failures);
        if (on_sim) {
            print_calls("after_pass1", &after1);
            print_calls("after_pass2", &after2);
            /* The peak over every pass: the device's own high watermark. */
            printf("fragmentation_all_passes=%.4f\n",
                   last.peak_reserved_bytes ? 1.0 - (double)r.peak_live_bytes /
                                                        (double)last.peak_reserved_bytes : 0.0);
        }
    }

    free_leftovers(&t, al, ptrs);
    if (al->teardown)
        al->teardown(al->ctx);
    free(ptrs);
    trace_free(&t);
    fflush(stdout);
    return r.alloc_failures || r.free_failures || later_failures ? 1 : 0;
}
