/* The non-interactive outputs of cachealloc-top. */
#ifndef CACHEALLOC_TOP_REPORT_H
#define CACHEALLOC_TOP_REPORT_H

#include <stdio.h>

#include "seg_scan.h"

/* --once: one plain table, one row per process and device, human sizes. */
void top_report_text(FILE *out, const top_list *l);

/* --json: one document (shape in docs/stats.md), exact integers. */
void top_report_json(FILE *out, const top_list *l);

/* --prometheus: OpenMetrics text of the live processes, ending with "# EOF". */
void top_report_prometheus(FILE *out, const top_list *l);

#endif
