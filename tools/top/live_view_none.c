/* Built instead of live_view.c when ncurses is missing. */
#include "live_view.h"

#include <stdio.h>

int top_live(const char *dir, int pid_filter, double delay_s)
{
    (void)dir;
    (void)pid_filter;
    (void)delay_s;
    fprintf(stderr, "cachealloc-top: built without ncurses; use --once, --json or --prometheus\n");
    return 1;
}
