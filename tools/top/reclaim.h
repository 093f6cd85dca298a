/* Asking a process to release its cached memory through its segment's control word. */
#ifndef CACHEALLOC_TOP_RECLAIM_H
#define CACHEALLOC_TOP_RECLAIM_H

#include <stddef.h>
#include <stdint.h>

typedef struct top_reclaim {
    int pid;
    void *map;        /* the segment's header, mapped shared (NULL: none) */
    size_t maplen;
    uint64_t seq;     /* our request's sequence number */
} top_reclaim;

/* Post a reclaim request (dev < 0: every device) to pid's segment in dir. Refuses a segment
 * that is not a valid one, not a regular file, or owned by another user (unless we are root).
 * Returns 0, or -1 with a reason in why. */
int top_reclaim_send(const char *dir, int pid, int dev, top_reclaim *r, char *why, size_t whylen);

/* 1 when the writer answered (bytes released in *bytes), 0 not yet, -1 on error. */
int top_reclaim_poll(top_reclaim *r, uint64_t *bytes);

/* Unmap. Safe on a zeroed or already closed request. */
void top_reclaim_close(top_reclaim *r);

#endif
