/* The launcher is installed in bindir and the library in libdir of the same prefix, so the
 * path from one to the other is fixed at build time and the prefix itself never is: a tree
 * installed with DESTDIR, moved or unpacked elsewhere still finds its own library. */
#include "launch_find.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CA_LIBDIR_REL
#define CA_LIBDIR_REL "../lib"
#endif
#ifndef CA_BUILD_REL
#define CA_BUILD_REL "../shim"
#endif
#define LIB_NAME "libcachealloc.so"

int ca_launch_self_dir(char *out, size_t len)
{
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (slash == NULL)
        return -1;
    *slash = '\0';
    if (slash == buf) /* the launcher sits in / */
        strcpy(buf, "/");
    if (strlen(buf) >= len)
        return -1;
    strcpy(out, buf);
    return 0;
}

/* dir/rel/LIB_NAME (rel absolute: rel/LIB_NAME), resolved, when it is a regular file. */
static int try_place(const char *dir, const char *rel, char *out, size_t len, char *shown,
                     size_t shownlen)
{
    char path[PATH_MAX], real[PATH_MAX];
    int n = rel[0] == '/' ? snprintf(path, sizeof path, "%s/%s", rel, LIB_NAME)
                          : snprintf(path, sizeof path, "%s/%s/%s", dir, rel, LIB_NAME);
    snprintf(shown, shownlen, "%s", path);
    struct stat st;
    if (n < 0 || (size_t)n >= sizeof path || realpath(path, real) == NULL ||
        stat(real, &st) != 0 || !S_ISREG(st.st_mode) || strlen(real) >= len)
        return -1;
    strcpy(out, real);
    return 0;
}

int ca_launch_find_library(const char *exe_dir, char *out, size_t len, char *why,
                           size_t whylen)
{
    char a[PATH_MAX], b[PATH_MAX];
    if (try_place(exe_dir, CA_LIBDIR_REL, out, len, a, sizeof a) == 0 ||
        try_place(exe_dir, CA_BUILD_REL, out, len, b, sizeof b) == 0)
        return 0;
    snprintf(why, whylen, "no %s at %s nor at %s", LIB_NAME, a, b);
    return -1;
}
