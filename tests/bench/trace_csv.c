#include "trace_csv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* handle -> live allocation id, chained; ids index next[], so removal is a walk of one chain. */
typedef struct handle_map {
    uint32_t *head;    /* nbuckets entries; UINT32_MAX: empty */
    uint32_t *next;    /* per id                              */
    uint64_t *handle;  /* per id                              */
    size_t nbuckets;
    size_t cap;        /* ids the per-id arrays can hold      */
} handle_map;

#define NO_ID UINT32_MAX

static size_t bucket_of(const handle_map *m, uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (size_t)(h & (m->nbuckets - 1));
}

static int map_init(handle_map *m)
{
    m->nbuckets = 1u << 16;
    m->cap = 1024;
    m->head = malloc(m->nbuckets * sizeof *m->head);
    m->next = malloc(m->cap * sizeof *m->next);
    m->handle = malloc(m->cap * sizeof *m->handle);
    if (!m->head || !m->next || !m->handle)
        return -1;
    memset(m->head, 0xff, m->nbuckets * sizeof *m->head);
    return 0;
}

static void map_free(handle_map *m)
{
    free(m->head);
    free(m->next);
    free(m->handle);
}

/* Remove handle h from the map; its live id, or NO_ID. */
static uint32_t map_take(handle_map *m, uint64_t h)
{
    uint32_t *link = &m->head[bucket_of(m, h)];
    while (*link != NO_ID) {
        uint32_t id = *link;
        if (m->handle[id] == h) {
            *link = m->next[id];
            return id;
        }
        link = &m->next[id];
    }
    return NO_ID;
}

static int map_put(handle_map *m, uint64_t h, uint32_t id)
{
    if (id >= m->cap) {
        size_t cap = m->cap * 2;
        uint32_t *next = realloc(m->next, cap * sizeof *next);
        if (!next)
            return -1;
        m->next = next;
        uint64_t *handle = realloc(m->handle, cap * sizeof *handle);
        if (!handle)
            return -1;
        m->handle = handle;
        m->cap = cap;
    }
    size_t b = bucket_of(m, h);
    m->handle[id] = h;
    m->next[id] = m->head[b];
    m->head[b] = id;
    return 0;
}

/* Split line in place at commas into at most max fields; the number found. */
static int split_fields(char *line, char **f, int max)
{
    int n = 0;
    f[n++] = line;
    for (char *c = line; *c && n < max; c++)
        if (*c == ',') {
            *c = '\0';
            f[n++] = c + 1;
        }
    return n;
}

static int parse_u64(const char *s, int base, uint64_t *out)
{
    char *end;
    if (*s == '\0' || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, base);
    if (errno || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

/* Handles are device addresses in hex ("0x7fe6...") or integer ids in decimal. */
static int parse_handle(const char *s, uint64_t *out)
{
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return s[2] ? parse_u64(s + 2, 16, out) : -1;
    return parse_u64(s, 10, out);
}

static int push_event(trace *t, size_t *cap, trace_event e)
{
    if (t->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 1024;
        trace_event *ev = realloc(t->ev, ncap * sizeof *ev);
        if (!ev)
            return -1;
        t->ev = ev;
        *cap = ncap;
    }
    t->ev[t->n++] = e;
    return 0;
}

static void strip_eol(char *s)
{
    size_t len = strlen(s);
    while (len > 0 && (s[len - 1] == '\n' || s[len - 1] == '\r'))
        s[--len] = '\0';
}

/* One data line. 0: kept or ignored; -1: malformed, *why says how. */
static int take_line(trace *t, handle_map *m, size_t *cap, char *line, const char **why)
{
    char *f[7];
    if (split_fields(line, f, 7) != 6) {
        *why = "expected 6 comma-separated fields";
        return -1;
    }
    const char *ev = f[2];
    int is_alloc = strcmp(ev, "A") == 0, is_free = strcmp(ev, "F") == 0;
    if (!is_alloc && !is_free) {
        /* Pinned host memory's events (HA, HF, HSA, HSF) are not the device's: skipped. */
        if (strcmp(ev, "FC") && strcmp(ev, "SA") && strcmp(ev, "SF") && strcmp(ev, "HA") &&
            strcmp(ev, "HF") && strcmp(ev, "HSA") && strcmp(ev, "HSF")) {
            *why = "unknown event (expected A, F, FC, SA, SF, HA, HF, HSA or HSF)";
            return -1;
        }
        t->other_events++;
        return 0;
    }
    uint64_t handle, size, stream;
    if (parse_handle(f[3], &handle) != 0) {
        *why = "bad handle";
        return -1;
    }
    if (parse_u64(f[4], 10, &size) != 0) {
        *why = "bad size";
        return -1;
    }
    if (f[5][0] == '\0')
        stream = 0;
    else if (parse_u64(f[5], 10, &stream) != 0) {
        *why = "bad stream";
        return -1;
    }
    trace_event e = {.kind = is_alloc ? 'A' : 'F', .size = size, .stream = stream};
    uint32_t live = map_take(m, handle);
    if (is_alloc) {
        if (live != NO_ID)
            t->relived_handles++;
        if (t->nallocs == NO_ID) {
            *why = "too many allocations";
            return -1;
        }
        e.id = t->nallocs++;
        if (map_put(m, handle, e.id) != 0) {
            *why = "out of memory";
            return -1;
        }
    } else {
        if (live == NO_ID) {
            t->unmatched_frees++;
            return 0;
        }
        e.id = live;
    }
    if (push_event(t, cap, e) != 0) {
        *why = "out of memory";
        return -1;
    }
    return 0;
}

int trace_load(const char *path, trace *t, FILE *err)
{
    memset(t, 0, sizeof *t);
    FILE *fp = fopen(path, "r");
    if (!fp) {
        fprintf(err, "trace: %s: %s\n", path, strerror(errno));
        return -1;
    }
    handle_map m;
    if (map_init(&m) != 0) {
        map_free(&m);
        fclose(fp);
        fprintf(err, "trace: %s: out of memory\n", path);
        return -1;
    }
    char line[512];
    size_t lineno = 0, cap = 0;
    int rc = 0;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(fp)) {
            fprintf(err, "trace: %s:%zu: line too long\n", path, lineno);
            rc = -1;
            break;
        }
        strip_eol(line);
        if (line[0] == '\0')
            continue;
        if (lineno == 1) {
            if (strcmp(line, "seq,time_us,event,handle,size,stream") != 0) {
                fprintf(err, "trace: %s:1: expected the header "
                             "seq,time_us,event,handle,size,stream\n", path);
                rc = -1;
                break;
            }
            continue;
        }
        t->lines++;
        const char *why = NULL;
        if (take_line(t, &m, &cap, line, &why) != 0) {
            fprintf(err, "trace: %s:%zu: %s\n", path, lineno, why);
            rc = -1;
            break;
        }
    }
    if (rc == 0 && lineno == 0) {
        fprintf(err, "trace: %s: empty file\n", path);
        rc = -1;
    }
    map_free(&m);
    fclose(fp);
    if (rc != 0)
        trace_free(t);
    return rc;
}

void trace_free(trace *t)
{
    free(t->ev);
    t->ev = NULL;
    t->n = 0;
}
