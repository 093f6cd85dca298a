/* Reader of the allocation-trace CSV format (seq,time_us,event,handle,size,stream).
 *
 * Only what a replay of the program's own requests needs is kept: the A (allocate) and
 * F (free) events. Handles are resolved at load time, so the replay itself does no lookups:
 * every A gets a dense id, and every F names the id of the live A with the same handle.
 * A free whose handle has no live A (allocated before the recording began) is dropped and
 * counted; a handle may be allocated again after its F. */
#ifndef TRACE_CSV_H
#define TRACE_CSV_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct trace_event {
    char kind;        /* 'A' or 'F'                            */
    uint32_t id;      /* dense allocation id, 0 .. nallocs - 1 */
    uint64_t size;    /* requested bytes                       */
    uint64_t stream;  /* the trace's stream id                 */
} trace_event;

typedef struct trace {
    trace_event *ev;
    size_t n;                /* events kept (A and matched F)                     */
    uint32_t nallocs;        /* A events                                           */
    size_t lines;            /* data lines read                                   */
    size_t other_events;     /* FC, SA, SF: the recording allocator's own events  */
    size_t unmatched_frees;  /* F without a live A: skipped                       */
    size_t relived_handles;  /* A of a handle still live: the older one is leaked */
} trace;

/* Load path into *t. 0 on success; -1 after one line on err naming the file, the line and the
 * problem (bad input never crashes). */
int trace_load(const char *path, trace *t, FILE *err);

/* Release what trace_load allocated; t may be zeroed or already freed. */
void trace_free(trace *t);

#ifdef __cplusplus
}
#endif

#endif
