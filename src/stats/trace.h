/* CACHEALLOC_TRACE: the allocation timeline as CSV, in the format of real GPU traces
 * (seq,time_us,event,handle,size,stream; events A, F, SA, SF, and HA, HF, HSA, HSF for pinned
 * host memory), so one replay tool and one plotting script read ours and recorded ones alike. */
#ifndef CACHEALLOC_TRACE_H
#define CACHEALLOC_TRACE_H

#include <stdio.h>

#include "base/types.h"

typedef struct ca_trace ca_trace;

/* Longest time a record waits in memory before it reaches the file, in milliseconds. */
#define CA_TRACE_FLUSH_MS 200

/* Create (truncate) path, write the header and start the flushing thread. NULL on failure,
 * after one line on err. */
ca_trace *ca_trace_open(const char *path, FILE *err);

/* Append one event; a ca_trace_fn, with the ca_trace as its context. Thread-safe. */
void ca_trace_event(void *trace, ca_trace_kind kind, int dev, const void *ptr, size_t size,
                    ca_stream_t stream);

/* Flush everything written so far to the file. */
void ca_trace_flush(ca_trace *t);

/* In a forked child: drop what the parent had not written yet and record nothing more (the
 * parent owns the file). */
void ca_trace_after_fork_child(ca_trace *t);

/* Flush, stop the flushing thread and close the file; t may be NULL. */
void ca_trace_close(ca_trace *t);

#endif
