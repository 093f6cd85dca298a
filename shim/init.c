/* Lazy one-time initialization and fork handling. No constructor: the
 * first interposed call does the work, so a process that never calls CUDA or HIP pays nothing. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tcache/tcache.h"
#include "backend.h"
#include "capture.h"
#include "lane.h"
#include "arena/leak.h"
#include "loader.h"
#include "stats/neighbours.h"
#include "ptsz_scan.h"
#include "init.h"
#include "real.h"
#include "process.h"
#include "stats_source.h"
#include "streams.h"
#include "stats/trace.h"
#include "verbose.h"

static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static ca_config config;
static ca_trace *trace;

static ca_runtime *_Atomic opened[CA_RT_COUNT];  /* runtimes the program ever called */
static atomic_int absent_said[CA_RT_COUNT];

static void after_fork_child(void)
{
    /* Another thread may have held a lock at fork; it does not exist in the child. */
    for (int i = 0; i < CA_RT_COUNT; i++) {
        ca_runtime *rt = atomic_load(&opened[i]);
        if (rt != NULL) {
            pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
            rt->init_lock = fresh;
        }
    }
    for (int i = 0; i < CA_RT_COUNT; i++) {
        ca_runtime *rt = ca_runtime_by_index(i);
        if (rt != NULL)
            ca_arena_forget(rt->arena);
        /* The parent's pinned blocks are plain copies here, and its pool's lock may be held:
         * the child starts a pool of its own (the old one is left, never touched). */
        if (rt != NULL)
            atomic_store(&rt->host_pool, NULL);
    }
    ca_streams_after_fork();
    ca_capture_after_fork();
    ca_trace_after_fork_child(trace);
    ca_stats_source_after_fork();
    ca_neighbours_after_fork();
    ca_lane_invalidate();
}

/* At exit, by exit or quick_exit (never a device call): the leak report and the verbose
 * summary of every arena, the rest of the timeline. */
static void at_exit_reports(void)
{
    for (int i = 0; i < CA_RT_COUNT; i++) {
        ca_runtime *rt = ca_runtime_by_index(i);
        if (rt != NULL && ca_shim_options()->leak_check != CA_LEAK_OFF) {
            ca_leak_report(rt->arena, rt->api, stderr);
            ca_host_pool *hp = atomic_load(&rt->host_pool);
            if (hp)
                ca_leak_report_host(hp, stderr);
        }
        if (rt != NULL && ca_shim_options()->verbose)
            ca_verbose_summary(stderr, rt);
    }
    /* Flushed, not closed: other threads may still allocate while the process exits. */
    ca_trace_flush(trace);
}

/* Once, at the first door that opens: the arenas' configuration, the timeline, the reports
 * at exit and the fork handler. */
static void setup(void)
{
    const ca_options *opts = ca_shim_options();
    ca_options_to_config(opts, &config);
    if (opts->trace_path[0] != '\0' && (trace = ca_trace_open(opts->trace_path, stderr)) != NULL) {
        config.trace = ca_trace_event;
        config.trace_ctx = trace;
    }
    if (opts->leak_check != CA_LEAK_OFF || trace != NULL || opts->verbose) {
        atexit(at_exit_reports);
        at_quick_exit(at_exit_reports);
    }
    pthread_atfork(NULL, NULL, after_fork_child);
    /* Lanes hold their thread's cache: it must not outlive it there. */
    ca_tc_set_retire_hook(ca_lane_disarm);
}

const ca_config *ca_shim_config(void)
{
    return &config;
}

static CA_COLD void scan_imports(ca_runtime *rt)
{
    unsigned gen = atomic_load_explicit(&ca_dlopen_gen, memory_order_acquire);
    Dl_info info;
    const void *base = NULL;
    if (rt->fn.malloc && dladdr((void *)(uintptr_t)rt->fn.malloc, &info))
        base = info.dli_fbase;
    if (ca_imports_per_thread_stream(base) && !atomic_exchange(&rt->per_thread_default, 1))
        ca_lane_invalidate(); /* every device must now be told at its next plain allocation */
    atomic_store(&rt->scanned_gen, gen);
}

void ca_per_thread_default_check(ca_runtime *rt, int dev)
{
    /* A dlopen since the last look may have brought such code. The count moves before the
     * load (its wrapper must end in the real call): a load still under way on another thread
     * when this scan runs is seen only after the next load. */
    if (atomic_load_explicit(&rt->scanned_gen, memory_order_relaxed) !=
        atomic_load_explicit(&ca_dlopen_gen, memory_order_relaxed))
        scan_imports(rt);
    if (!atomic_load_explicit(&rt->per_thread_default, memory_order_relaxed))
        return;
    unsigned long long bit = 1ull << dev;
    /* Read first: a read-modify-write on every call would bounce the line between threads. */
    if (!(atomic_load_explicit(&rt->ptd_devices, memory_order_relaxed) & bit) &&
        !(atomic_fetch_or(&rt->ptd_devices, bit) & bit))
        ca_per_thread_streams_used(rt->arena, dev);
}

/* The first of rt's tool variables set to something, or NULL. */
static const char *tool_attached(const ca_runtime *rt)
{
    for (const char *const *v = rt->tool_envs; v != NULL && *v != NULL; v++) {
        const char *val = getenv(*v);
        if (val != NULL && val[0] != '\0')
            return *v;
    }
    return NULL;
}

/* Under rt->init_lock: find the runtime and make the arena, or say why not. */
static void open_runtime(ca_runtime *rt)
{
    switch (rt->resolve != NULL ? rt->resolve(rt) : ca_real_resolve(rt)) {
    case CA_REAL_OK: {
        /* A tool that checks every access (compute-sanitizer) would see blocks inside the
         * cache's segments as one big allocation, and miss out-of-bounds accesses. */
        const char *tool = tool_attached(rt);
        if (tool != NULL) {
            atomic_store_explicit(&rt->passthrough, 1, memory_order_release);
            fprintf(stderr, "cachealloc: %s is set (a debugging or profiling tool is attached): "
                            "the %s cache is off, every call goes to the %s\n", tool,
                    rt->api, rt->real_what);
            return;
        }
        ca_backend be;
        ca_backend_make(rt, &be);
        ca_config mine = config; /* the ladder's last rung asks processes of this API */
        mine.expandable = ca_rt_expandable(rt);
        mine.reuse = ca_rt_reuse(rt);
        rt->free_syncs = mine.reuse == CA_REUSE_SYNC;
        if (ca_shim_options()->neighbours) {
            mine.neighbours_api = rt->api;
            mine.neighbours_wait_ms = CA_NEIGHBOURS_WAIT_MS;
        }
        rt->arena = ca_arena_create(&be, &mine);
        if (rt->arena != NULL) {
            if (ca_shim_options()->verbose)
                ca_verbose_start(stderr, rt, ca_shim_options());
            scan_imports(rt);
            ca_registry_add(rt);
            atomic_store_explicit(&rt->ready, 1, memory_order_release);
            return;
        }
        atomic_store_explicit(&rt->passthrough, 1, memory_order_release);
        if (ca_shim_options()->verbose)
            fprintf(stderr, "cachealloc: no memory for the %s cache; calls pass through "
                            "uncached\n", rt->api);
        return;
    }
    case CA_REAL_INCOMPLETE:
        atomic_store_explicit(&rt->passthrough, 1, memory_order_release);
        if (ca_shim_options()->verbose)
            fprintf(stderr, "cachealloc: the loaded %s runtime lacks a function the cache "
                            "needs; calls pass through uncached\n", rt->api);
        return;
    default:
        /* Nothing to pass a call to: it fails, and is tried again at the next call (the
         * runtime may be loaded later). */
        if (ca_shim_options()->verbose && !atomic_exchange(&absent_said[rt->index], 1))
            fprintf(stderr, "cachealloc: no loaded library defines %s: %s calls fail with "
                            "error %u until the %s runtime is loaded\n", rt->syms[0].name,
                    rt->api, rt->codes.not_initialized, rt->api);
        return;
    }
}

static CA_COLD bool cache_ready_slow(ca_runtime *rt)
{
    if (atomic_load_explicit(&rt->passthrough, memory_order_acquire))
        return false;
    atomic_store(&opened[rt->index], rt);
    pthread_once(&setup_once, setup);
    pthread_mutex_lock(&rt->init_lock);
    if (!atomic_load(&rt->ready) && !atomic_load(&rt->passthrough))
        open_runtime(rt);
    bool ok = atomic_load(&rt->ready);
    pthread_mutex_unlock(&rt->init_lock);
    return ok;
}

bool ca_cache_ready(ca_runtime *rt)
{
    if (ca_real_call_depth)
        return false;
    if (atomic_load_explicit(&rt->ready, memory_order_acquire))
        return true;
    return cache_ready_slow(rt);
}

