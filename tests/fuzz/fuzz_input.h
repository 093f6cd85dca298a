/* What the fuzz targets share: libFuzzer's input as a C string. */
#ifndef CACHEALLOC_FUZZ_INPUT_H
#define CACHEALLOC_FUZZ_INPUT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A NUL-terminated copy of data (which may hold NULs of its own); NULL when out of memory.
 * The caller frees it. */
static inline char *fuzz_cstring(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (buf) {
        memcpy(buf, data, size);
        buf[size] = '\0';
    }
    return buf;
}

#endif
