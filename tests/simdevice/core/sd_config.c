/* sd_config.c: the SIMDEV_* environment variables. A bad value never stops the program: one line
 * on stderr and the default. The prices' defaults come from the profile (sd_profiles.c). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sd_internal.h"

struct sd_config sd_cfg;
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;

static void bad(const char *name, const char *val, const char *accepted, const char *def)
{
    fprintf(stderr, "simdevice: %s=\"%s\" is not valid (%s); using the default %s\n", name, val,
            accepted, def);
}

/* A variable's value, or NULL when unset or empty (both mean the default); clears errno for the
 * strto* call that parses it. */
static const char *env_value(const char *name)
{
    const char *v = getenv(name);
    errno = 0;
    return v && *v ? v : NULL;
}

static size_t env_size(const char *name, size_t def, const char *defs)
{
    const char *v = env_value(name);
    if (!v)
        return def;
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    unsigned shift = 0;
    if (end != v && *end) {
        switch (*end) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        case 't': case 'T': shift = 40; break;
        default: shift = 99;
        }
        end++;
    }
    if (end == v || *end || errno || shift == 99 || v[0] == '-' || x == 0 ||
        (shift && x > (~0ULL >> shift)) || (x << shift) > (1ULL << 46)) {
        bad(name, v, "a size such as 512, 64K, 8M, 6G, 1T, at most 64T", defs);
        return def;
    }
    return (size_t)(x << shift);
}

static double env_real(const char *name, double def, double hi, const char *accepted,
                       const char *defs)
{
    const char *v = env_value(name);
    double x = def;
    if (v && !sd_parse_real(v, hi, &x))
        bad(name, v, accepted, defs);
    return x;
}

/* A price: the profile gives its default (sd_profiles.c). */
static double env_us(const char *name, double def)
{
    char defs[32];
    snprintf(defs, sizeof defs, "%g", def);
    return env_real(name, def, 1e9, "microseconds, a number >= 0", defs);
}

static double env_rate(const char *name)
{
    return env_real(name, 0, 1, "a probability from 0 to 1", "0");
}

static long env_int(const char *name, long def, long lo, long hi, const char *accepted,
                    const char *defs)
{
    const char *v = env_value(name);
    if (!v)
        return def;
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi) {
        bad(name, v, accepted, defs);
        return def;
    }
    return x;
}

/* A name for SIMDEV_SHARED: it becomes part of a file name, so only [A-Za-z0-9_-]{1,64}. */
static const char *env_name(const char *name)
{
    const char *v = env_value(name);
    size_t n = v ? strlen(v) : 0;
    if (!v || (n <= 64 && strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                    "0123456789_-") == n))
        return v;
    bad(name, v, "1 to 64 letters, digits, '_' or '-'", "(not shared)");
    return NULL;
}

static void cfg_read(void)
{
    sd_cfg.devices = (int)env_int("SIMDEV_DEVICES", 1, 0, SD_MAX_DEVICES,
                                  "an integer from 0 to 64", "1");
    sd_cfg.memory = env_size("SIMDEV_MEMORY", (size_t)8 << 30, "8G");
    sd_cfg.verbose = (int)env_int("SIMDEV_VERBOSE", 0, 0, 1, "0 or 1", "0");
    sd_cfg.profile = sd_profile_apply(&sd_cfg, env_us);
    sd_cfg.pinned_limit = env_size("SIMDEV_PINNED_LIMIT", 0, "0 (no limit)");
    sd_cfg.hip_reentrant = (int)env_int("SIMDEV_HIP_REENTRANT", 0, 0, 2, "0, 1 or 2", "0");
    sd_cfg.base_offset = (size_t)env_int("SIMDEV_BASE_OFFSET", 0, 0, 4095,
                                         "bytes from 0 to 4095", "0");
    sd_cfg.fail_alloc_nth = env_int("SIMDEV_FAIL_ALLOC_NTH", 0, 0, LONG_MAX,
                                    "an integer >= 0 (0: off)", "0");
    sd_cfg.fail_alloc_rate = env_rate("SIMDEV_FAIL_ALLOC_RATE");
    sd_cfg.fail_event_create_rate = env_rate("SIMDEV_FAIL_EVENT_CREATE_RATE");
    sd_cfg.fail_event_record_rate = env_rate("SIMDEV_FAIL_EVENT_RECORD_RATE");
    sd_cfg.fail_seed = env_int("SIMDEV_FAIL_SEED", 1, 0, LONG_MAX, "an integer >= 0", "1");
    sd_cfg.sync_delay_us = env_us("SIMDEV_SYNC_DELAY_US", 0);
    sd_cfg.shared = env_name("SIMDEV_SHARED");
    const char *f = getenv("SIMDEV_COUNTERS_FILE");
    sd_cfg.counters_file = (f && *f) ? f : NULL;
    if (sd_cfg.verbose)
        sd_profile_log(&sd_cfg);
}

void sd_config_init(void)
{
    pthread_once(&cfg_once, cfg_read);
}

double sd_config_price(const char *name)
{
    sd_config_init();
    return name ? sd_profile_price(&sd_cfg, name) : -1;
}
