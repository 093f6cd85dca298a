/* Where the launcher finds libcachealloc.so: next to itself, never under a fixed prefix. */
#ifndef CACHEALLOC_LAUNCH_FIND_H
#define CACHEALLOC_LAUNCH_FIND_H

#include <stddef.h>

/* The library's absolute, resolved path for the launcher whose directory is exe_dir: first
 * exe_dir/CA_LIBDIR_REL (the installed layout), then exe_dir/CA_BUILD_REL (the build tree).
 * 0 on success; -1 with the places looked at in why. */
int ca_launch_find_library(const char *exe_dir, char *out, size_t len, char *why,
                           size_t whylen);

/* The directory of the running executable (/proc/self/exe, links resolved). 0 on success. */
int ca_launch_self_dir(char *out, size_t len);

#endif
