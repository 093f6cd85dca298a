#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ca_trace {
    FILE *f;
    pthread_mutex_t lock;
    uint64_t seq;
    int off; /* a forked child's copy: writes nothing */
};

ca_trace *ca_trace_open(const char *path, FILE *err)
{
    ca_trace *t = calloc(1, sizeof *t);
    FILE *f = t ? fopen(path, "we") : NULL;
    if (!f) {
        if (err)
            fprintf(err, "cachealloc: CACHEALLOC_TRACE=%s cannot be written (%s); no timeline\n",
                    path, strerror(t ? errno : ENOMEM));
        free(t);
        return NULL;
    }
    /* Full buffering: the trace is written under the arena's device lock. */
    setvbuf(f, NULL, _IOFBF, 1 << 16);
    fputs("seq,time_us,event,handle,size,stream\n", f);
    t->f = f;
    pthread_mutex_init(&t->lock, NULL);
    return t;
}

static const char *event_name(ca_trace_kind kind)
{
    switch (kind) {
    case CA_TRACE_ALLOC: return "A";
    case CA_TRACE_FREE: return "F";
    case CA_TRACE_SEG_ALLOC: return "SA";
    case CA_TRACE_SEG_FREE: return "SF";
    }
    return "?";
}

void ca_trace_event(void *trace, ca_trace_kind kind, int dev, const void *ptr, size_t size,
                    ca_stream_t stream)
{
    ca_trace *t = trace;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
    (void)dev; /* device addresses are unique across devices (unified addressing) */
    pthread_mutex_lock(&t->lock);
    if (!t->off)
        fprintf(t->f, "%" PRIu64 ",%" PRIu64 ",%s,%#" PRIxPTR ",%zu,%" PRIuPTR "\n", t->seq++, us,
            event_name(kind), (uintptr_t)ptr, size, (uintptr_t)stream);
    pthread_mutex_unlock(&t->lock);
}

void ca_trace_flush(ca_trace *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    fflush(t->f);
    pthread_mutex_unlock(&t->lock);
}

void ca_trace_after_fork_child(ca_trace *t)
{
    if (!t)
        return;
    pthread_mutex_init(&t->lock, NULL);
    __fpurge(t->f);
    t->off = 1;
}

void ca_trace_close(ca_trace *t)
{
    if (!t)
        return;
    fclose(t->f);
    pthread_mutex_destroy(&t->lock);
    free(t);
}
