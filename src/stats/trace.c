/* The timeline is the record a user asked for, so it must survive however the program ends:
 * records are formatted into a buffer of whole lines, written with write(2) when the buffer is
 * half full, when a record finds the last write older than the flush interval, and by a small
 * thread (only while tracing) at that interval, so that a program that leaves by _exit or is
 * killed still leaves everything up to the last interval. A write is always of whole lines, so
 * the file never ends in a torn one. */
#include "stats/trace.h"
#include "base/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TRACE_BUF (64 * 1024)
#define TRACE_LINE_MAX 128

struct ca_trace {
    int fd;
    pthread_mutex_t lock;
    uint64_t seq;
    uint64_t last_flush_ns;
    int off; /* a forked child's copy: writes nothing */
    atomic_int stop;
    int have_flusher;
    pthread_t flusher;
    size_t len;
    char buf[TRACE_BUF];
};

/* Under t->lock: write out the buffered lines. */
static void flush_locked(ca_trace *t)
{
    size_t done = 0;
    while (!t->off && done < t->len) {
        ssize_t n = write(t->fd, t->buf + done, t->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* a full disk loses the rest of this buffer, never the program */
        done += (size_t)n;
    }
    t->len = 0;
    t->last_flush_ns = ca_now_ns();
}

static void *flusher(void *arg)
{
    ca_trace *t = arg;
    const struct timespec tick = {0, CA_TRACE_FLUSH_MS * 1000000L};
    while (!atomic_load(&t->stop)) {
        nanosleep(&tick, NULL);
        ca_trace_flush(t);
    }
    return NULL;
}

static void start_flusher(ca_trace *t)
{
    pthread_attr_t attr;
    sigset_t all, old;
    if (pthread_attr_init(&attr) != 0)
        return;
    pthread_attr_setstacksize(&attr, 64 * 1024);
    /* The program's signals are the program's: the thread takes none of them. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* Without the thread, records still flush as they come. */
    t->have_flusher = pthread_create(&t->flusher, &attr, flusher, t) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
}

ca_trace *ca_trace_open(const char *path, FILE *err)
{
    ca_trace *t = calloc(1, sizeof *t);
    int fd = t ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
    if (fd < 0) {
        if (err)
            fprintf(err, "cachealloc: CACHEALLOC_TRACE=%s cannot be written (%s); no timeline\n",
                    path, strerror(t ? errno : ENOMEM));
        free(t);
        return NULL;
    }
    t->fd = fd;
    pthread_mutex_init(&t->lock, NULL);
    static const char header[] = "seq,time_us,event,handle,size,stream\n";
    memcpy(t->buf, header, sizeof header - 1);
    t->len = sizeof header - 1;
    pthread_mutex_lock(&t->lock);
    flush_locked(t);
    pthread_mutex_unlock(&t->lock);
    start_flusher(t);
    return t;
}

static const char *event_name(ca_trace_kind kind)
{
    switch (kind) {
    case CA_TRACE_ALLOC: return "A";
    case CA_TRACE_FREE: return "F";
    case CA_TRACE_SEG_ALLOC: return "SA";
    case CA_TRACE_SEG_FREE: return "SF";
    case CA_TRACE_HOST_ALLOC: return "HA";
    case CA_TRACE_HOST_FREE: return "HF";
    case CA_TRACE_HOST_PIN: return "HSA";
    case CA_TRACE_HOST_UNPIN: return "HSF";
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
    if (!t->off) {
        if (t->len + TRACE_LINE_MAX > sizeof t->buf)
            flush_locked(t);
        int n = snprintf(t->buf + t->len, TRACE_LINE_MAX,
                         "%" PRIu64 ",%" PRIu64 ",%s,%#" PRIxPTR ",%zu,%" PRIuPTR "\n", t->seq++,
                         us, event_name(kind), (uintptr_t)ptr, size, (uintptr_t)stream);
        if (n > 0 && n < TRACE_LINE_MAX)
            t->len += (size_t)n;
        if (t->len > sizeof t->buf / 2 ||
            ca_now_ns() - t->last_flush_ns > (uint64_t)CA_TRACE_FLUSH_MS * 1000000u)
            flush_locked(t);
    }
    pthread_mutex_unlock(&t->lock);
}

void ca_trace_flush(ca_trace *t)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->lock);
    if (t->len)
        flush_locked(t);
    pthread_mutex_unlock(&t->lock);
}

void ca_trace_after_fork_child(ca_trace *t)
{
    if (!t)
        return;
    pthread_mutex_init(&t->lock, NULL);
    t->len = 0;
    t->off = 1;
    t->have_flusher = 0; /* the parent's thread does not exist here */
}

void ca_trace_close(ca_trace *t)
{
    if (!t)
        return;
    atomic_store(&t->stop, 1);
    if (t->have_flusher)
        pthread_join(t->flusher, NULL);
    ca_trace_flush(t);
    close(t->fd);
    pthread_mutex_destroy(&t->lock);
    free(t);
}
