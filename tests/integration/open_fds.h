/* open_fds.h: counting this process's open descriptors and threads, for the tests that show an
 * exchange leaks none. Header-only. */
#ifndef CA_TEST_OPEN_FDS_H
#define CA_TEST_OPEN_FDS_H

#include <dirent.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

/* Entries of a /proc directory of this process (its "." and ".." included), or -1. */
static inline int proc_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

/* Descriptors open in this process (the count /proc/self/fd lists, its own included). */
static inline int open_fds(void)
{
    return proc_entries("/proc/self/fd");
}

/* Threads of this process (the count /proc/self/task lists, less "." and ".."). */
static inline int live_threads(void)
{
    return proc_entries("/proc/self/task") - 2;
}

/* Whether count() is back to n within `seconds` (another thread, such as the exporter's, may
 * close its last descriptor, or end, a little after its peer has what it needs). */
static inline int back_to(int (*count)(void), const char *what, int n, int seconds)
{
    for (int i = 0; i < 100 * seconds; i++) {
        if (count() == n)
            return 1;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    fprintf(stderr, "%d %s, %d before\n", count(), what, n);
    return 0;
}

static inline int fds_back_to(int n, int seconds)
{
    return back_to(open_fds, "descriptors open", n, seconds);
}

static inline int threads_back_to(int n, int seconds)
{
    return back_to(live_threads, "threads", n, seconds);
}

/* The simulator holds a descriptor per shareable mapping, in both processes: the soft limit
 * raised to the hard one. */
static inline void raise_fd_limit(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

#endif
