#include <stdlib.h>
#include <string.h>

#include "devices.h"
#include "report.h"
#include "rows.h"

#define BAR_WIDTH 40

/* One bar per device above the table, as the live view shows them. */
static void device_lines(FILE *out, const top_list *l)
{
    top_devsum *sums;
    unsigned n = top_devices_sum(l, &sums);
    for (unsigned i = 0; i < n; i++) {
        char bar[BAR_WIDTH + 3], text[160];
        top_device_bar(&sums[i], BAR_WIDTH, bar);
        top_device_text(&sums[i], text, sizeof text);
        fprintf(out, "DEV%-3u %s %s\n", sums[i].device, bar, text);
    }
    if (n)
        fputc('\n', out);
    free(sums);
}

void top_report_text(FILE *out, const top_list *l)
{
    top_row *rows;
    unsigned n = top_rows_build(l, &rows);
    top_rows_sort(rows, n, COL_PID);
    device_lines(out, l);
    for (int c = 0; c < COL_COUNT; c++) {
        if (c == COL_COMMAND)
            fprintf(out, "%s\n", top_col_title[c]);
        else
            fprintf(out, c <= COL_USER || c == COL_API ? "%-*s " : "%*s ", top_col_width[c],
                    top_col_title[c]);
    }
    for (unsigned i = 0; i < n; i++) {
        char cell[CA_STATS_CMDLINE_LEN + 16];
        for (int c = 0; c < COL_COUNT; c++) {
            top_cell(&rows[i], (top_col)c, cell, sizeof cell);
            if (c == COL_COMMAND)
                fprintf(out, "%s%s\n", top_row_status(rows[i].proc), cell);
            else
                fprintf(out, c <= COL_USER || c == COL_API ? "%-*s " : "%*s ",
                        top_col_width[c], cell);
        }
    }
    if (n == 0)
        fprintf(out, "(no process is publishing cachealloc statistics)\n");
    free(rows);
}
