/* profile_check.h: what the price-profile programs (drv_profiles.c, hip_profiles.c) share: the
 * prices read back from the stand-in, and its stderr kept from its first call, where the
 * SIMDEV_* variables are read and a bad profile is reported. */
#ifndef SIM_PROFILE_CHECK_H
#define SIM_PROFILE_CHECK_H

#include <time.h>

#include "check.h"

/* The price in force, from the stand-in's simdev_get_price. */
static inline double price(const char *name)
{
    simdev_get_price_fn f = (simdev_get_price_fn)(uintptr_t)simdev_sym("simdev_get_price");
    CHECK(f != NULL);
    return f(name);
}

#define CHECK_PRICE(name, want)                                                                  \
    do {                                                                                         \
        double p_ = price(name), w_ = (want);                                                    \
        if (p_ - w_ > 1e-9 || w_ - p_ > 1e-9) {                                                  \
            fprintf(stderr, "FAIL %s:%d: %s is %g, not %g\n", __FILE__, __LINE__, name, p_, w_); \
            check_failed();                                                                      \
        }                                                                                        \
    } while (0)

/* What the stand-in wrote on stderr while it read its configuration (first_call). */
static char first_stderr[8192];

/* Runs first_call, the program's first call into the stand-in, with stderr kept in
 * first_stderr (and echoed). */
static inline void read_config(void (*first_call)(void))
{
    FILE *tmp;
    int saved = capture_stderr(&tmp);
    first_call();
    fflush(stderr);
    rewind(tmp);
    first_stderr[fread(first_stderr, 1, sizeof first_stderr - 1, tmp)] = 0;
    release_stderr(tmp, saved, "");
}

/* Lines of first_stderr that contain needle. */
static inline int stderr_lines(const char *needle)
{
    int n = 0;
    for (const char *l = first_stderr; *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)len, l);
        n += strstr(line, needle) != NULL;
        l += len + (end != NULL);
    }
    return n;
}

static inline double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

#endif
