/* ld.so splits LD_PRELOAD at colons and spaces; an entry is compared with the library by its
 * text first and then as a file, since the same library may be named by another path. */
#include "launch_env.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int same_file(const char *a, const struct stat *lib_st)
{
    struct stat st;
    return lib_st != NULL && stat(a, &st) == 0 && st.st_dev == lib_st->st_dev &&
           st.st_ino == lib_st->st_ino;
}

/* 1 when one of old's entries names lib. */
static int names_lib(const char *lib, const char *old)
{
    struct stat lib_st;
    const struct stat *lst = stat(lib, &lib_st) == 0 ? &lib_st : NULL;
    size_t n = strlen(old);
    char *copy = malloc(n + 1);
    if (copy == NULL)
        return 0;
    memcpy(copy, old, n + 1);
    int found = 0;
    char *save = NULL;
    for (char *e = strtok_r(copy, ": ", &save); e != NULL && !found;
         e = strtok_r(NULL, ": ", &save))
        found = strcmp(e, lib) == 0 || same_file(e, lst);
    free(copy);
    return found;
}

char *ca_launch_preload(const char *lib, const char *old)
{
    int keep = old != NULL && old[strspn(old, ": ")] != '\0';
    size_t n = strlen(lib) + (keep ? strlen(old) + 1 : 0);
    char *out = malloc(n + 1);
    if (out == NULL)
        return NULL;
    if (keep && names_lib(lib, old))
        strcpy(out, old);
    else if (keep)
        strcat(strcat(strcpy(out, lib), ":"), old);
    else
        strcpy(out, lib);
    return out;
}
