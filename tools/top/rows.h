/* The table model shared by --once and the live view: one row per process and device, and one
 * for its pinned host memory ("host"), sortable by a column. */
#ifndef CACHEALLOC_TOP_ROWS_H
#define CACHEALLOC_TOP_ROWS_H

#include "seg_scan.h"

typedef enum top_col {
    COL_PID, COL_USER, COL_DEV, COL_API, COL_RESERVED, COL_ALLOCATED, COL_CACHED, COL_PENDING,
    COL_PEAK, COL_HIT, COL_AVOIDED, COL_OOM, COL_WAITS, COL_COMMAND, COL_COUNT
} top_col;

typedef struct top_row {
    const top_proc *proc;
    const top_dev *dev;   /* NULL: the process has published nothing yet; the host pool's
                           * device is CA_STATS_HOST_DEVICE */
} top_row;

/* Column titles and widths (0: the last, as wide as the line), indexed by top_col. */
extern const char *const top_col_title[COL_COUNT];
extern const int top_col_width[COL_COUNT];

/* One row per (process, device) of l, and per process pinning host memory, into *rows
 * (malloc'd); returns the count. */
unsigned top_rows_build(const top_list *l, top_row **rows);

/* Sort: numbers descending (the biggest users first), pid, user, command ascending. */
void top_rows_sort(top_row *rows, unsigned n, top_col col);

/* Cache hit rate in percent, or -1 when there were no allocations. */
double top_hit_rate(const top_dev *d);

/* Nanoseconds the cache's own waits cost (synchronizations, fences, growth); 0 when the
 * writer does not publish them. */
uint64_t top_wait_ns(const top_dev *d);

/* Allocations the cache answered without the driver. */
uint64_t top_avoided(const top_dev *d);

/* What the tables put before a process's command: "[dead] ", "[not responding] " or "". */
const char *top_row_status(const top_proc *p);

/* Write the cell of row r, column c into buf (human sizes). */
void top_cell(const top_row *r, top_col c, char *buf, size_t len);

#endif
