/* Finding and reading every statistics segment of a directory, and reaping stale ones. */
#ifndef CACHEALLOC_TOP_SEG_SCAN_H
#define CACHEALLOC_TOP_SEG_SCAN_H

#include <stdio.h>

#include "seg_parse.h"

typedef struct top_list {
    top_proc *procs;
    unsigned n;
} top_list;

/* A live process whose heartbeat (every 250 ms) is older than this is not responding:
 * stopped, or its monitor thread stuck in a call. */
#define TOP_STALE_MS 5000u

/* The directory readers and the writer use: $CACHEALLOC_SHM_DIR, else /dev/shm. */
const char *top_shm_dir(void);

/* Parse "cachealloc.<uid>.<pid>" strictly (decimal, no sign, no extra bytes). 0 on success. */
int top_seg_name(const char *name, unsigned *uid, int *pid);

/* Read every valid segment of dir into out (pid_filter > 0: that pid only). Segments that
 * cannot be validated are skipped with a line on notes (may be NULL). Dead processes are
 * kept with alive = 0, stale ones with responding = 0; when reap is set, their segments are removed if they are ours (or we
 * are root). Returns 0, or -1 when dir cannot be opened. */
int top_scan(const char *dir, int pid_filter, int reap, top_list *out, FILE *notes);

/* Read one segment file: used by top_scan and by tests. dirfd/name as for openat. */
int top_read_segment(int dirfd, const char *name, top_proc *out, char *why, size_t whylen);

/* 1 when pid runs and (start_time == 0 or) was started at start_time. */
int top_pid_alive(int pid, uint64_t start_time);

/* Free the list. */
void top_list_clear(top_list *l);

#endif
