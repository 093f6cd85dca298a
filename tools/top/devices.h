/* One line per device for the tables: the device's memory as its processes' drivers report it,
 * and what the cache holds of it, over every live process. */
#ifndef CACHEALLOC_TOP_DEVICES_H
#define CACHEALLOC_TOP_DEVICES_H

#include <stddef.h>
#include <stdint.h>

#include "seg_scan.h"

typedef struct top_devsum {
    unsigned device;
    int has_mem;            /* total and free were published by some process       */
    uint64_t total, free;   /* from the process that published last                */
    uint64_t reserved;      /* the cache's, every live process together            */
    uint64_t allocated;     /* held by the programs                                */
    uint64_t cached;        /* held free by the cache (cached + pending)           */
    uint64_t given;         /* given back at neighbours' requests, live processes  */
} top_devsum;

/* One summary per device number among l's live processes, in device order, into *out
 * (malloc'd; free it). Returns the count (0 and *out NULL when there is none). */
unsigned top_devices_sum(const top_list *l, top_devsum **out);

/* The bar as nvtop draws it, width characters between brackets into buf (width + 3 bytes):
 * '|' allocated, '/' held free by the cache, '#' used otherwise, ' ' free. Against the
 * reserved bytes where the device's memory is not known. */
void top_device_bar(const top_devsum *d, int width, char *buf);

/* The words after the bar: "30.0 GiB used of 80.0 GiB; the cache holds 12.0 GiB (15.0%), 2.00 GiB
 * of it free", or, without the device's memory, the reserved bytes only. */
void top_device_text(const top_devsum *d, char *buf, size_t len);

#endif
