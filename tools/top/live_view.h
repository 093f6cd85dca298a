/* The full-screen live view (ncurses), modelled on nvtop. */
#ifndef CACHEALLOC_TOP_LIVE_VIEW_H
#define CACHEALLOC_TOP_LIVE_VIEW_H

/* Run until the user quits. Returns the exit status (0, or 1 when no terminal). */
int top_live(const char *dir, int pid_filter, double delay_s);

#endif
