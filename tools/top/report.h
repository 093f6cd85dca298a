/* The non-interactive outputs of cachealloc-top. */
#ifndef CACHEALLOC_TOP_REPORT_H
#define CACHEALLOC_TOP_REPORT_H

#include <stdio.h>

#include "seg_scan.h"

/* --once: one plain table, one row per process and device, human sizes. */
void top_report_text(FILE *out, const top_list *l);

/* --json: one document (shape in docs/stats.md), exact integers. */
void top_report_json(FILE *out, const top_list *l);

/* --prometheus and --serve: the live processes in Prometheus's exposition: OpenMetrics 1.0.0,
 * ending with "# EOF", when openmetrics is set, else the text format 0.0.4. */
void top_report_prometheus(FILE *out, const top_list *l, int openmetrics);

#endif
