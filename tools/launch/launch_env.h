/* The launcher's environment: where libcachealloc.so goes in LD_PRELOAD. Pure string work plus
 * stat, so the tests can drive it directly. */
#ifndef CACHEALLOC_LAUNCH_ENV_H
#define CACHEALLOC_LAUNCH_ENV_H

/* The LD_PRELOAD value that loads lib before the user's own entries (old, may be NULL or
 * empty). When old already names lib, by the same path or as the same file, old is kept as it
 * is, so nesting launchers never loads the library twice. malloc'd; NULL when out of memory. */
char *ca_launch_preload(const char *lib, const char *old);

#endif
