/* open_fds.h: counting this process's open descriptors, for the tests that show an exchange
 * leaks none. Header-only. */
#ifndef CA_TEST_OPEN_FDS_H
#define CA_TEST_OPEN_FDS_H

#include <dirent.h>
#include <stdio.h>
#include <time.h>

/* Descriptors open in this process (the count /proc/self/fd lists, its own included). */
static inline int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* Whether this process is back to n descriptors within `seconds` (another thread, such as the
 * exporter's, may close its last one a little after its peer has what it needs). */
static inline int fds_back_to(int n, int seconds)
{
    for (int i = 0; i < 100 * seconds; i++) {
        if (open_fds() == n)
            return 1;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    fprintf(stderr, "%d descriptors open, %d before\n", open_fds(), n);
    return 0;
}

#endif
