#include "arena/leak.h"
#include "base/clock.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

/* Listed one by one up to this many; the rest are counted. */
#define LEAK_LIST_MAX 64

typedef struct leak_walk {
    FILE *out;
    const char *api;
    uint64_t now_ns;
    int count;
    uint64_t bytes;
    int pass; /* 0: count, 1: list */
} leak_walk;

static void print_frame(FILE *out, int i, void *pc)
{
    Dl_info info;
    if (dladdr(pc, &info) && info.dli_fname) {
        if (info.dli_sname)
            fprintf(out, "      #%d %p %s(%s+%#" PRIxPTR ")\n", i, pc, info.dli_fname,
                    info.dli_sname, (uintptr_t)pc - (uintptr_t)info.dli_saddr);
        else
            fprintf(out, "      #%d %p %s+%#" PRIxPTR "\n", i, pc, info.dli_fname,
                    (uintptr_t)pc - (uintptr_t)info.dli_fbase);
    } else {
        fprintf(out, "      #%d %p\n", i, pc);
    }
}

static const char self_marker; /* any address inside this library */

static int in_self(void *pc)
{
    Dl_info self, info;
    return dladdr(&self_marker, &self) && dladdr(pc, &info) &&
           info.dli_fbase == self.dli_fbase;
}

static void visit(void *ctx, int dev, const void *ptr, size_t requested, uint64_t t_alloc_ns,
                  void *const *stack, int depth)
{
    leak_walk *w = ctx;
    if (w->pass == 0) {
        w->count++;
        w->bytes += requested;
        return;
    }
    if (w->count++ >= LEAK_LIST_MAX)
        return;
    fprintf(w->out, "  device %d: %p, %zu bytes", dev, ptr, requested);
    if (t_alloc_ns && w->now_ns >= t_alloc_ns)
        fprintf(w->out, ", allocated %.3f s before exit", (double)(w->now_ns - t_alloc_ns) / 1e9);
    fputc('\n', w->out);
    /* Start after the last frame inside this library (the arena, the shim's door): the call
     * that allocated. Frames before it may also belong to whoever intercepts backtrace(). */
    int first = 0;
    for (int i = 0; stack && i < depth; i++)
        if (in_self(stack[i]))
            first = i + 1;
    for (int i = first; stack && i < depth; i++)
        print_frame(w->out, i - first, stack[i]);
}

int ca_leak_report(ca_arena *a, const char *api, FILE *out)
{
    leak_walk w = {out, api ? api : "device", ca_now_ns(), 0, 0, 0};
    ca_foreach_live(a, visit, &w);
    if (w.count == 0)
        return 0;
    int total = w.count;
    fprintf(out, "cachealloc: %d %s allocation%s never freed (%" PRIu64 " bytes):\n", total,
            w.api, total == 1 ? "" : "s", w.bytes);
    w.pass = 1;
    w.count = 0;
    ca_foreach_live(a, visit, &w);
    if (total > LEAK_LIST_MAX)
        fprintf(out, "  ... and %d more\n", total - LEAK_LIST_MAX);
    fflush(out);
    return total;
}

typedef struct host_walk {
    FILE *out;
    int count;
    uint64_t bytes;
    int pass; /* 0: count, 1: list */
} host_walk;

static void visit_host(void *ctx, const void *p, size_t size)
{
    host_walk *w = ctx;
    if (w->pass == 1 && w->count < LEAK_LIST_MAX)
        fprintf(w->out, "  host: %p, %zu bytes\n", p, size);
    w->count++;
    w->bytes += size;
}

int ca_leak_report_host(ca_host_pool *hp, FILE *out)
{
    host_walk w = {out, 0, 0, 0};
    ca_host_foreach_live(hp, visit_host, &w);
    if (w.count == 0)
        return 0;
    int total = w.count;
    fprintf(out, "cachealloc: %d pinned host allocation%s never freed (%" PRIu64 " bytes):\n",
            total, total == 1 ? "" : "s", w.bytes);
    w = (host_walk){out, 0, 0, 1};
    ca_host_foreach_live(hp, visit_host, &w);
    if (total > LEAK_LIST_MAX)
        fprintf(out, "  ... and %d more\n", total - LEAK_LIST_MAX);
    fflush(out);
    return total;
}
