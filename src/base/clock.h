/* The one clock the arena, its statistics and its reports read: monotonic nanoseconds. */
#ifndef CACHEALLOC_CLOCK_H
#define CACHEALLOC_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds on CLOCK_MONOTONIC. */
static inline uint64_t ca_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif
