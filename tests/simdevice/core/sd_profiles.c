/* sd_profiles.c: the price lists SIMDEV_PROFILE selects, so that one policy can be tried on
 * several. A named list is a column of the table below; a value with a '/' names a file of
 * SIMDEV_NAME=value lines, over provisional's list (a GPU run's probe output, unrecompiled).
 * Every price's variable still overrides the list. The source of each figure is in
 * docs/simdevice.md, "Price profiles". */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sd_internal.h"

enum { PROVISIONAL, GPU, SYNC_DEAR, EVENTS_DEAR, NPROFILES };
static const char *const names[NPROFILES] = {"provisional", "gpu", "sync-dear", "events-dear"};
#define ACCEPTED "provisional, gpu, sync-dear, events-dear, or a file's path containing '/'"

/* A column's value of -1: provisional's (the named lists differ from it only where they say). */
#define SAME (-1.0)
#define F(field) offsetof(struct sd_config, field)

static const struct price {
    const char *var;
    size_t field; /* a double of struct sd_config */
    double v[NPROFILES];
} prices[] = {
    /* {variable, field, {provisional, gpu, sync-dear, events-dear}} */
    {"SIMDEV_MALLOC_US", F(malloc_us), {50, 47, SAME, SAME}},
    {"SIMDEV_MALLOC_US_PER_GIB", F(malloc_us_per_gib), {970, 123, SAME, SAME}},
    {"SIMDEV_FREE_US", F(free_us), {14, 36, SAME, SAME}},
    {"SIMDEV_FREE_US_PER_GIB", F(free_us_per_gib), {0, 650, SAME, SAME}},
    {"SIMDEV_ASYNC_US", F(async_us), {1, 0.7, SAME, SAME}},
    {"SIMDEV_VMM_RESERVE_US", F(vmm_reserve_us), {19, SAME, SAME, SAME}},
    {"SIMDEV_VMM_FREE_US", F(vmm_free_us), {10, SAME, SAME, SAME}},
    {"SIMDEV_VMM_CREATE_US", F(vmm_create_us), {13, 12.4, SAME, SAME}},
    {"SIMDEV_VMM_RELEASE_US", F(vmm_release_us), {0.5, 0.4, SAME, SAME}},
    {"SIMDEV_VMM_MAP_US", F(vmm_map_us), {1, 0.8, SAME, SAME}},
    {"SIMDEV_VMM_UNMAP_US", F(vmm_unmap_us), {33, 32, SAME, SAME}},
    {"SIMDEV_VMM_ACCESS_US", F(vmm_access_us), {28, 27.5, SAME, SAME}},
    {"SIMDEV_HOST_ALLOC_US", F(host_alloc_us), {900, 890, SAME, SAME}},
    {"SIMDEV_HOST_ALLOC_US_PER_MIB", F(host_alloc_us_per_mib), {490, 526, SAME, SAME}},
    {"SIMDEV_HOST_FREE_US", F(host_free_us), {380, 363, SAME, SAME}},
    {"SIMDEV_HOST_FREE_US_PER_MIB", F(host_free_us_per_mib), {150, 163, SAME, SAME}},
    {"SIMDEV_OP_LATENCY_US", F(op_latency_us), {3, SAME, SAME, SAME}},
    {"SIMDEV_LAUNCH_US", F(launch_us), {2, SAME, SAME, SAME}},
    {"SIMDEV_EVENT_RECORD_US", F(event_record_us), {0.35, SAME, SAME, 5}},
    {"SIMDEV_EVENT_QUERY_US", F(event_query_us), {0.15, SAME, SAME, 3}},
    {"SIMDEV_STREAM_QUERY_US", F(stream_query_us), {0.15, SAME, SAME, 3}},
    {"SIMDEV_STREAM_WAIT_US", F(stream_wait_us), {0.35, SAME, SAME, 5}},
    {"SIMDEV_SYNC_US", F(sync_us), {1, SAME, SAME, SAME}},
    {"SIMDEV_CTX_SYNC_US", F(ctx_sync_us), {0, SAME, 500, SAME}},
};
enum { NPRICES = sizeof prices / sizeof prices[0] };

static double *field_of(struct sd_config *cfg, size_t i)
{
    return (double *)(void *)((char *)cfg + prices[i].field);
}

static double value_of(const struct sd_config *cfg, size_t i)
{
    return *(const double *)(const void *)((const char *)cfg + prices[i].field);
}

static int price_index(const char *var)
{
    for (int i = 0; i < NPRICES; i++)
        if (strcmp(prices[i].var, var) == 0)
            return i;
    return -1;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    return s;
}

/* One line of a profile file into v: "NAME=value", or blank; a line it cannot use gets one
 * line on stderr and changes nothing. */
static void file_line(const char *path, int n, char *line, double *v)
{
    line[strcspn(line, "#\r\n")] = 0;
    char *name = trim(line);
    if (!*name)
        return;
    char *eq = strchr(name, '=');
    if (eq)
        *eq = 0;
    int i = eq ? price_index(trim(name)) : -1;
    double x;
    if (i < 0)
        fprintf(stderr, "simdevice: SIMDEV_PROFILE file \"%s\", line %d: \"%s\" is not a price "
                "(SIMDEV_NAME=microseconds); ignored\n", path, n, name);
    else if (!sd_parse_real(trim(eq + 1), 1e9, &x))
        fprintf(stderr, "simdevice: SIMDEV_PROFILE file \"%s\", line %d: %s=\"%s\" is not valid "
                "(microseconds, a number >= 0); ignored\n", path, n, name, trim(eq + 1));
    else
        v[i] = x;
}

/* Reads the profile file at path into v, which holds provisional's prices; false when it cannot
 * be read. */
static bool read_file(const char *path, double *v)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "simdevice: SIMDEV_PROFILE=\"%s\" cannot be read (%s); using the default "
                "provisional\n", path, strerror(errno));
        return false;
    }
    char line[1024];
    for (int n = 1; fgets(line, sizeof line, f); n++)
        file_line(path, n, line, v);
    fclose(f);
    return true;
}

/* The profile SIMDEV_PROFILE names, its prices into v; returns its name. */
static const char *choose(double *v)
{
    for (int i = 0; i < NPRICES; i++)
        v[i] = prices[i].v[PROVISIONAL];
    const char *p = getenv("SIMDEV_PROFILE");
    if (!p || !*p)
        return names[PROVISIONAL];
    if (strchr(p, '/'))
        return read_file(p, v) ? p : names[PROVISIONAL];
    for (int k = 0; k < NPROFILES; k++)
        if (strcmp(p, names[k]) == 0) {
            for (int i = 0; i < NPRICES; i++)
                v[i] = prices[i].v[k] == SAME ? v[i] : prices[i].v[k];
            return names[k];
        }
    fprintf(stderr, "simdevice: SIMDEV_PROFILE=\"%s\" is not valid (%s); using the default "
            "provisional\n", p, ACCEPTED);
    return names[PROVISIONAL];
}

const char *sd_profile_apply(struct sd_config *cfg, double (*env_us)(const char *, double))
{
    double v[NPRICES];
    const char *name = choose(v);
    for (size_t i = 0; i < NPRICES; i++)
        *field_of(cfg, i) = env_us(prices[i].var, v[i]);
    return name;
}

double sd_profile_price(const struct sd_config *cfg, const char *name)
{
    int i = price_index(name);
    return i < 0 ? -1 : value_of(cfg, (size_t)i);
}

void sd_profile_log(const struct sd_config *cfg)
{
    char buf[1024];
    size_t n = (size_t)snprintf(buf, sizeof buf, "prices: profile %s", cfg->profile);
    for (size_t i = 0; i < NPRICES && n < sizeof buf; i++) {
        const char *v = getenv(prices[i].var);
        if (v && *v)
            n += (size_t)snprintf(buf + n, sizeof buf - n, ", %s=%g", prices[i].var,
                                  value_of(cfg, i));
    }
    fprintf(stderr, "simdevice: %s\n", buf);
}
