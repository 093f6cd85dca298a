/* CACHEALLOC_* environment options, table-driven after mimalloc's src/options.c.
 *
 * Every variable is one row of opt_table. Parsing never allocates (it runs inside a preloaded
 * library, possibly before the program's allocator is usable) and never stops the program:
 * a bad value costs one line on err and leaves the default in place. docs/options.md lists
 * the variables and the exact rules.
 */
#include "options/options.h"

#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#define PREFIX "CACHEALLOC_"
#define MiB ((uint64_t)1 << 20)

typedef enum opt_id {
    OPT_POOL, OPT_REUSE, OPT_FENCES, OPT_RESERVE_FACTOR, OPT_LIMIT, OPT_RELEASE, OPT_PREALLOC, OPT_MAX_SPLIT,
    OPT_EXPANDABLE, OPT_EXPANDABLE_PIECE, OPT_PINNED, OPT_PINNED_LIMIT, OPT_THREAD_CACHE, OPT_STATS, OPT_NEIGHBOURS, OPT_IDLE_RELEASE, OPT_LEAK, OPT_TRACE, OPT_VERBOSE, OPT_SHM_DIR, OPT_COUNT
} opt_id;

typedef enum opt_kind {
    K_CHOICE,   /* one word of a list, case-insensitive */
    K_SIZE,     /* a size, at least min_size            */
    K_SIZE_PCT, /* a size or 1%..100%                   */
    K_PATH,     /* a non-empty path that fits           */
    K_SECONDS,  /* whole seconds, an optional "s"       */
    K_EXTERNAL, /* read by another module: known, not parsed here */
} opt_kind;

typedef struct opt_choice {
    const char *word;
    int value;
} opt_choice;

/* The canonical word of each value comes first: the summary prints it. */
static const opt_choice pool_words[] = {
    {"split", CA_POOL_SPLIT}, {"binned", CA_POOL_BINNED}, {"none", CA_POOL_NONE}, {NULL, 0}};
static const opt_choice reuse_words[] = {
    {"auto", CA_REUSE_AUTO}, {"safe", CA_REUSE_SAFE}, {"sync", CA_REUSE_SYNC},
    {"stream", CA_REUSE_STREAM}, {NULL, 0}};
static const opt_choice fences_words[] = {
    {"auto", CA_FENCES_AUTO}, {"device", CA_FENCES_DEVICE}, {"events", CA_FENCES_EVENTS},
    {NULL, 0}};
/* A size option that also takes "auto" (stored as 0): the arena chooses. */
static const opt_choice auto_words[] = {{"auto", 0}, {NULL, 0}};
static const opt_choice factor_words[] = {
    {"2", 2}, {"3", 3}, {"4", 4}, {"8", 8}, {"16", 16}, {NULL, 0}};
static const opt_choice bool_words[] = {
    {"0", 0}, {"1", 1}, {"false", 0}, {"true", 1}, {"off", 0}, {"on", 1},
    {"no", 0}, {"yes", 1}, {NULL, 0}};
static const opt_choice expandable_words[] = {
    {"auto", CA_EXPANDABLE_AUTO}, {"0", 0}, {"1", 1}, {"false", 0}, {"true", 1}, {"off", 0},
    {"on", 1}, {"no", 0}, {"yes", 1}, {NULL, 0}};
static const opt_choice leak_words[] = {
    {"0", CA_LEAK_OFF}, {"1", CA_LEAK_ON}, {"stacks", CA_LEAK_STACKS},
    {"false", CA_LEAK_OFF}, {"true", CA_LEAK_ON}, {"off", CA_LEAK_OFF}, {"on", CA_LEAK_ON},
    {"no", CA_LEAK_OFF}, {"yes", CA_LEAK_ON}, {NULL, 0}};

#define BOOL_ACCEPTED "0, 1, true, false, on, off, yes, no"
#define SIZE_ACCEPTED "512, 64K, 8M, 6G, 1T"

typedef struct opt_desc {
    const char *name;             /* the variable                          */
    const char *key;              /* its short name in the summary         */
    opt_kind kind;
    const opt_choice *choices;    /* K_CHOICE                              */
    uint64_t min_size;            /* K_SIZE                                */
    const char *accepted;         /* what the warning line says is accepted */
    const char *default_text;     /* what it says the default is           */
} opt_desc;

static const opt_desc opt_table[OPT_COUNT] = {
    [OPT_POOL] = {PREFIX "POOL", "pool", K_CHOICE, pool_words, 0, "split, binned, none", "split"},
    [OPT_REUSE] = {PREFIX "REUSE", "reuse", K_CHOICE, reuse_words, 0, "auto, safe, sync, stream",
                   "auto"},
    [OPT_FENCES] = {PREFIX "FENCES", "fences", K_CHOICE, fences_words, 0,
                    "auto, device, events", "auto"},
    [OPT_RESERVE_FACTOR] = {PREFIX "RESERVE_FACTOR", "reserve_factor", K_CHOICE, factor_words, 0,
                            "2, 3, 4, 8, 16", "2"},
    [OPT_LIMIT] = {PREFIX "LIMIT", "limit", K_SIZE_PCT, NULL, 0,
                   SIZE_ACCEPTED " or 1%..100%", "no limit"},
    [OPT_RELEASE] = {PREFIX "RELEASE_THRESHOLD", "release_threshold", K_SIZE_PCT, NULL, 0,
                     SIZE_ACCEPTED " or 1%..100%", "keep all"},
    [OPT_PREALLOC] = {PREFIX "PREALLOC", "prealloc", K_SIZE, NULL, 0, SIZE_ACCEPTED, "0"},
    /* At or below the 20 MiB mid-size segment, every such segment would be unsplittable. */
    [OPT_MAX_SPLIT] = {PREFIX "MAX_SPLIT", "max_split", K_SIZE, NULL, 20 * MiB + 1,
                       "a size above 20M: 32M, 1G, 1T", "unlimited"},
    [OPT_EXPANDABLE] = {PREFIX "EXPANDABLE", "expandable", K_CHOICE, expandable_words, 0,
                        "auto, " BOOL_ACCEPTED, "auto"},
    /* The driver's page (2 MiB on NVIDIA's GPUs) is the least a mapping can be. */
    [OPT_EXPANDABLE_PIECE] = {PREFIX "EXPANDABLE_PIECE", "expandable_piece", K_SIZE,
                              auto_words, 2 * MiB, "auto, or a size of at least 2M: 2M, 4M, 20M",
                              "auto"},
    [OPT_PINNED] = {PREFIX "PINNED", "pinned", K_CHOICE, bool_words, 0, BOOL_ACCEPTED, "1"},
    [OPT_PINNED_LIMIT] = {PREFIX "PINNED_LIMIT", "pinned_limit", K_SIZE, NULL, 0, SIZE_ACCEPTED,
                          "no limit"},
    [OPT_THREAD_CACHE] = {PREFIX "THREAD_CACHE", "thread_cache", K_CHOICE, bool_words, 0,
                          BOOL_ACCEPTED, "1"},
    [OPT_STATS] = {PREFIX "STATS", "stats", K_CHOICE, bool_words, 0, BOOL_ACCEPTED, "1"},
    [OPT_NEIGHBOURS] = {PREFIX "NEIGHBOURS", "neighbours", K_CHOICE, bool_words, 0,
                        BOOL_ACCEPTED, "1"},
    [OPT_IDLE_RELEASE] = {PREFIX "IDLE_RELEASE", "idle_release", K_SECONDS, NULL, 0,
                          "whole seconds such as 10 or 10s, at most a year; 0: never", "10s"},
    [OPT_LEAK] = {PREFIX "LEAK_CHECK", "leak_check", K_CHOICE, leak_words, 0,
                  "0, 1, stacks (or true, false, on, off, yes, no)", "0"},
    [OPT_TRACE] = {PREFIX "TRACE", "trace", K_PATH, NULL, 0, "a file path", "off"},
    [OPT_VERBOSE] = {PREFIX "VERBOSE", "verbose", K_CHOICE, bool_words, 0, BOOL_ACCEPTED, "0"},
    [OPT_SHM_DIR] = {PREFIX "SHM_DIR", "shm_dir", K_EXTERNAL, NULL, 0, "a directory", "/dev/shm"},
};

/* One option's value, whatever its kind, so that parsing, storing and the summary share code. */
typedef struct opt_value {
    int choice;       /* K_CHOICE            */
    uint64_t bytes;   /* K_SIZE, K_SIZE_PCT  */
    unsigned percent; /* K_SIZE_PCT: 0 unset */
    const char *path; /* K_PATH              */
} opt_value;

static opt_value opt_get(const ca_options *o, opt_id id) {
    opt_value v = {0, 0, 0, ""};
    switch (id) {
    case OPT_POOL: v.choice = (int)o->pool; break;
    case OPT_REUSE: v.choice = o->reuse; break;
    case OPT_FENCES: v.choice = (int)o->fences; break;
    case OPT_LIMIT: v.bytes = o->limit_bytes; v.percent = o->limit_percent; break;
    case OPT_RELEASE: v.bytes = o->release_threshold; v.percent = o->release_percent; break;
    case OPT_PREALLOC: v.bytes = o->prealloc_bytes; break;
    case OPT_MAX_SPLIT: v.bytes = o->max_split; break;
    case OPT_EXPANDABLE: v.choice = o->expandable; break;
    case OPT_EXPANDABLE_PIECE: v.bytes = o->expandable_piece; break;
    case OPT_PINNED: v.choice = o->pinned; break;
    case OPT_PINNED_LIMIT: v.bytes = o->pinned_limit; break;
    case OPT_THREAD_CACHE: v.choice = o->thread_cache; break;
    case OPT_RESERVE_FACTOR: v.choice = (int)o->reserve_factor; break;
    case OPT_STATS: v.choice = o->stats; break;
    case OPT_NEIGHBOURS: v.choice = o->neighbours; break;
    case OPT_IDLE_RELEASE: v.bytes = o->idle_release_s; break;
    case OPT_LEAK: v.choice = (int)o->leak_check; break;
    case OPT_TRACE: v.path = o->trace_path; break;
    case OPT_VERBOSE: v.choice = o->verbose; break;
    case OPT_SHM_DIR: case OPT_COUNT: break;
    }
    return v;
}

/* A percentage replaces the byte value, which keeps its default ("set instead", options.h). */
static void opt_set(ca_options *o, opt_id id, const opt_value *v) {
    switch (id) {
    case OPT_POOL: o->pool = (ca_pool_kind)v->choice; break;
    case OPT_REUSE: o->reuse = v->choice; break;
    case OPT_FENCES: o->fences = (ca_fences_kind)v->choice; break;
    case OPT_LIMIT:
        o->limit_bytes = v->percent ? 0 : v->bytes;
        o->limit_percent = v->percent;
        break;
    case OPT_RELEASE:
        o->release_threshold = v->percent ? UINT64_MAX : v->bytes;
        o->release_percent = v->percent;
        break;
    case OPT_PREALLOC: o->prealloc_bytes = v->bytes; break;
    case OPT_MAX_SPLIT: o->max_split = v->bytes; break;
    case OPT_EXPANDABLE: o->expandable = v->choice; break;
    case OPT_EXPANDABLE_PIECE: o->expandable_piece = v->bytes; break;
    case OPT_PINNED: o->pinned = v->choice; break;
    case OPT_PINNED_LIMIT: o->pinned_limit = v->bytes; break;
    case OPT_THREAD_CACHE: o->thread_cache = v->choice; break;
    case OPT_RESERVE_FACTOR: o->reserve_factor = (unsigned)v->choice; break;
    case OPT_STATS: o->stats = v->choice; break;
    case OPT_NEIGHBOURS: o->neighbours = v->choice; break;
    case OPT_IDLE_RELEASE: o->idle_release_s = v->bytes; break;
    case OPT_LEAK: o->leak_check = (ca_leak_mode)v->choice; break;
    case OPT_TRACE: memcpy(o->trace_path, v->path, strlen(v->path) + 1); break; /* fits: checked */
    case OPT_VERBOSE: o->verbose = v->choice; break;
    case OPT_SHM_DIR: case OPT_COUNT: break;
    }
}

void ca_options_defaults(ca_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->pool = CA_POOL_SPLIT;
    o->reuse = CA_REUSE_AUTO;
    o->fences = CA_FENCES_AUTO;
    o->release_threshold = UINT64_MAX;
    o->max_split = UINT64_MAX;
    o->expandable = CA_EXPANDABLE_AUTO;
    o->expandable_piece = 0; /* auto */
    o->pinned = 1;
    o->thread_cache = 1;
    o->reserve_factor = 2;
    o->stats = 1;
    o->neighbours = 1;
    o->idle_release_s = 10;
    o->leak_check = CA_LEAK_OFF;
}

static int lower(int c) { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; }

static int same_word(const char *a, const char *b) {
    while (*a && lower((unsigned char)*a) == lower((unsigned char)*b)) a++, b++;
    return *a == 0 && *b == 0;
}

/* Why a value was refused; each reason reads after "NAME=value". */
typedef enum opt_error {
    E_OK = 0, E_EMPTY, E_NOT_SIZE, E_NEGATIVE, E_TOO_LARGE, E_RANGE, E_TOO_SMALL,
    E_CHOICE, E_TOO_LONG, E_NOT_NUMBER
} opt_error;

static const char *const error_text[] = {
    [E_OK] = "", [E_EMPTY] = "is empty", [E_NOT_SIZE] = "is not a size",
    [E_NEGATIVE] = "is negative", [E_TOO_LARGE] = "is too large",
    [E_RANGE] = "is not a percentage from 1% to 100%", [E_TOO_SMALL] = "is too small",
    [E_CHOICE] = "is not an accepted value", [E_TOO_LONG] = "is too long",
    [E_NOT_NUMBER] = "is not a whole number of seconds",
};

/* Digits only: a sign, a space or a decimal point make the value bad. */
static opt_error parse_digits(const char **s, uint64_t *out) {
    const char *p = *s;
    uint64_t v = 0;
    if (*p == '-') return E_NEGATIVE;
    if (*p < '0' || *p > '9') return E_NOT_SIZE;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return E_TOO_LARGE;
        v = v * 10 + d;
    }
    *s = p;
    *out = v;
    return E_OK;
}

static opt_error size_error(const char *s, uint64_t *out) {
    uint64_t v;
    unsigned shift = 0;
    opt_error e;
    if (*s == 0) return E_EMPTY;
    if ((e = parse_digits(&s, &v)) != E_OK) return e;
    switch (lower((unsigned char)*s)) {
    case 'k': shift = 10; break;
    case 'm': shift = 20; break;
    case 'g': shift = 30; break;
    case 't': shift = 40; break;
    default: break;
    }
    if (shift) {
        s++;
        if (lower((unsigned char)*s) == 'i') { /* "KiB"; a bare "Ki" is refused */
            if (lower((unsigned char)*++s) != 'b') return E_NOT_SIZE;
            s++;
        } else if (lower((unsigned char)*s) == 'b') {
            s++;
        }
    } else if (lower((unsigned char)*s) == 'b') {
        s++;
    }
    if (*s) return E_NOT_SIZE;
    if (shift && v > (UINT64_MAX >> shift)) return E_TOO_LARGE;
    *out = v << shift;
    return E_OK;
}

int ca_parse_size(const char *s, uint64_t *out) {
    if (!s || !out) return -1;
    return size_error(s, out) == E_OK ? 0 : -1;
}

static opt_error percent_error(const char *s, unsigned *out) {
    uint64_t v;
    opt_error e;
    if (*s == 0) return E_EMPTY;
    if ((e = parse_digits(&s, &v)) != E_OK) return e == E_TOO_LARGE ? E_RANGE : e;
    if (s[0] != '%' || s[1] != 0) return E_NOT_SIZE;
    if (v < 1 || v > 100) return E_RANGE;
    *out = (unsigned)v;
    return E_OK;
}

int ca_parse_percent(const char *s, unsigned *out) {
    if (!s || !out) return -1;
    return percent_error(s, out) == E_OK ? 0 : -1;
}

static opt_error parse_value(const opt_desc *d, const char *s, opt_value *v) {
    if (d->kind == K_EXTERNAL) return E_OK; /* its reader judges it */
    if (*s == 0) return E_EMPTY;
    switch (d->kind) {
    case K_CHOICE:
        for (const opt_choice *c = d->choices; c->word; c++)
            if (same_word(s, c->word)) return v->choice = c->value, E_OK;
        return E_CHOICE;
    case K_SIZE_PCT:
        if (s[strlen(s) - 1] == '%') return percent_error(s, &v->percent);
        return size_error(s, &v->bytes);
    case K_SIZE: {
        for (const opt_choice *c = d->choices; c && c->word; c++)
            if (same_word(s, c->word)) return v->bytes = (uint64_t)c->value, E_OK;
        opt_error e = size_error(s, &v->bytes);
        if (e == E_OK && v->bytes < d->min_size) e = E_TOO_SMALL;
        return e;
    }
    case K_SECONDS: {
        opt_error e = parse_digits(&s, &v->bytes);
        if (e == E_NOT_SIZE) e = E_NOT_NUMBER;
        if (e == E_OK && lower((unsigned char)*s) == 's') s++;
        if (e == E_OK && *s) e = E_NOT_NUMBER;
        if (e == E_OK && v->bytes > 366 * 86400) e = E_TOO_LARGE;
        return e;
    }
    case K_PATH:
        if (strlen(s) >= sizeof ((ca_options *)0)->trace_path) return E_TOO_LONG;
        v->path = s;
        return E_OK;
    case K_EXTERNAL:
        break;
    }
    return E_OK;
}

/* Copy s for a one-line message: control characters would break the line, and a huge value
 * would bury it, so both are tamed. */
static void show(char *buf, size_t len, const char *s, size_t max) {
    size_t i = 0;
    for (; s[i] && i < max && i + 4 < len; i++) {
        unsigned char c = (unsigned char)s[i];
        buf[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (s[i]) memcpy(buf + i, "...", 4);
    else buf[i] = 0;
}

/* Optimal string alignment distance, case-insensitive, on at most 63 characters. */
static unsigned edit_distance(const char *a, const char *b) {
    enum { N = 64 };
    unsigned char d[N][N];
    size_t la = strnlen(a, N - 1), lb = strnlen(b, N - 1);
    for (size_t i = 0; i <= la; i++) d[i][0] = (unsigned char)i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = (unsigned char)j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            int ca = lower((unsigned char)a[i - 1]), cb = lower((unsigned char)b[j - 1]);
            unsigned best = d[i - 1][j - 1] + (unsigned)(ca != cb);
            unsigned del = d[i - 1][j] + 1u, ins = d[i][j - 1] + 1u;
            if (del < best) best = del;
            if (ins < best) best = ins;
            if (i > 1 && j > 1 && ca == lower((unsigned char)b[j - 2]) &&
                lower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1u < best)
                best = d[i - 2][j - 2] + 1u;
            d[i][j] = (unsigned char)best;
        }
    }
    return d[la][lb];
}

static const opt_desc *closest(const char *name) {
    const opt_desc *best = &opt_table[0];
    unsigned best_d = UINT32_MAX;
    for (int i = 0; i < OPT_COUNT; i++) {
        unsigned dist = edit_distance(name, opt_table[i].name);
        if (dist < best_d) best_d = dist, best = &opt_table[i];
    }
    return best;
}

static void warn(FILE *err, const char *fmt, ...) {
    va_list ap;
    if (!err) return;
    va_start(ap, fmt);
    vfprintf(err, fmt, ap);
    va_end(ap);
    fflush(err);
}

/* Starts from the defaults, so "using the default" in a warning is always true. The first
 * occurrence of a name wins, as with getenv. */
int ca_options_parse(ca_options *o, char *const *envp, FILE *err) {
    int problems = 0;
    unsigned char seen[OPT_COUNT] = {0};
    char name[72], value[96];
    if (!o) return 0;
    ca_options_defaults(o);
    for (; envp && *envp; envp++) {
        const char *entry = *envp, *eq = strchr(entry, '=');
        const opt_desc *d = NULL;
        if (strncmp(entry, PREFIX, sizeof PREFIX - 1) != 0 || !eq) continue;
        size_t nlen = (size_t)(eq - entry);
        for (int i = 0; i < OPT_COUNT; i++)
            if (strlen(opt_table[i].name) == nlen && !memcmp(entry, opt_table[i].name, nlen))
                d = &opt_table[i];
        if (!d) {
            char full[72];
            size_t n = nlen < sizeof full - 1 ? nlen : sizeof full - 1;
            memcpy(full, entry, n);
            full[n] = 0;
            show(name, sizeof name, full, 64);
            warn(err, "cachealloc: unknown variable %s (did you mean %s?); ignored\n", name,
                 closest(full)->name);
            problems++;
            continue;
        }
        opt_id id = (opt_id)(d - opt_table);
        if (seen[id]++) continue;
        opt_value v = opt_get(o, id);
        opt_error e = parse_value(d, eq + 1, &v);
        if (e == E_OK) {
            opt_set(o, id, &v);
            continue;
        }
        problems++;
        if (e == E_EMPTY) {
            warn(err, "cachealloc: %s is empty (accepted: %s); using the default (%s)\n",
                 d->name, d->accepted, d->default_text);
        } else {
            show(value, sizeof value, eq + 1, 80);
            warn(err, "cachealloc: %s=%s %s (accepted: %s); using the default (%s)\n", d->name,
                 value, error_text[e], d->accepted, d->default_text);
        }
    }
    return problems;
}

int ca_options_entry(int i, const char **name, const char **accepted, const char **def) {
    if (i < 0 || i >= OPT_COUNT) return -1;
    if (name) *name = opt_table[i].name;
    if (accepted) *accepted = opt_table[i].accepted;
    if (def) *def = opt_table[i].default_text;
    return 0;
}

int ca_options_check(const char *name, const char *value, char *why, size_t len) {
    const opt_desc *d = NULL;
    char shown[96];
    if (!name || !value || !why || len == 0) return -1;
    for (int i = 0; i < OPT_COUNT; i++)
        if (strcmp(name, opt_table[i].name) == 0) d = &opt_table[i];
    if (!d) {
        snprintf(why, len, "%s is not a known variable", name);
        return -1;
    }
    ca_options scratch;
    ca_options_defaults(&scratch);
    opt_value v = opt_get(&scratch, (opt_id)(d - opt_table));
    opt_error e = parse_value(d, value, &v);
    if (e == E_OK) {
        why[0] = 0;
        return 0;
    }
    if (e == E_EMPTY) {
        snprintf(why, len, "the value is empty (accepted: %s)", d->accepted);
        return -1;
    }
    show(shown, sizeof shown, value, 80);
    snprintf(why, len, "'%s' %s (accepted: %s)", shown, error_text[e], d->accepted);
    return -1;
}

void ca_options_to_config(const ca_options *o, ca_config *c) {
    if (!o || !c) return;
    memset(c, 0, sizeof *c);
    c->pool = o->pool;
    c->reuse = o->reuse == CA_REUSE_AUTO ? CA_REUSE_SAFE : (ca_reuse_kind)o->reuse;
    c->fences = o->fences;
    c->limit_bytes = o->limit_bytes;
    c->limit_percent = o->limit_percent;
    c->release_threshold = o->release_threshold;
    c->release_percent = o->release_percent;
    c->prealloc_bytes = o->prealloc_bytes;
    c->max_split = o->max_split;
    c->expandable = o->expandable;
    c->expandable_piece = o->expandable_piece;
    c->thread_cache = o->thread_cache;
    c->reserve_factor = o->reserve_factor;
    c->big_align = CA_BIG_ALIGN_DEFAULT;
    c->record_alloc_times = o->leak_check != CA_LEAK_OFF;
    c->record_stacks = o->leak_check == CA_LEAK_STACKS;
    c->verbose = o->verbose;
    /* trace, trace_ctx and quiet stay NULL/0 from the memset: the shim sets them. */
}

/* A size in the largest unit that divides it, so that "6G" reads back as "6G". */
static void format_size(char *buf, size_t len, uint64_t v) {
    static const char units[] = "KMGT";
    int u = 0;
    while (u < 4 && v != 0 && (v & 1023) == 0) v >>= 10, u++;
    if (u) snprintf(buf, len, "%llu%c", (unsigned long long)v, units[u - 1]);
    else snprintf(buf, len, "%llu", (unsigned long long)v);
}

static void format_value(const opt_desc *d, const opt_value *v, char *buf, size_t len) {
    buf[0] = 0;
    switch (d->kind) {
    case K_CHOICE:
        for (const opt_choice *c = d->choices; c->word; c++)
            if (c->value == v->choice) {
                snprintf(buf, len, "%s", c->word);
                return;
            }
        snprintf(buf, len, "%d", v->choice);
        return;
    case K_SIZE_PCT:
        if (v->percent) {
            snprintf(buf, len, "%u%%", v->percent);
            return;
        }
        /* fall through */
    case K_SIZE:
        for (const opt_choice *c = d->choices; c && c->word; c++)
            if ((uint64_t)c->value == v->bytes) {
                snprintf(buf, len, "%s", c->word);
                return;
            }
        format_size(buf, len, v->bytes);
        return;
    case K_PATH:
        show(buf, len, v->path, len); /* it lands on a terminal in cachealloc-top */
        return;
    case K_SECONDS:
        snprintf(buf, len, "%llus", (unsigned long long)v->bytes);
        return;
    case K_EXTERNAL:
        return;
    }
}

/* Writes the options that differ from the default, and those of `always` (a mask of opt_id
 * bits) whatever their value, the default ones as their default's text. */
static void describe(const ca_options *o, unsigned always, char *buf, size_t len) {
    ca_options def;
    char text[sizeof o->trace_path];
    size_t used = 0;
    if (!buf || len == 0) return;
    buf[0] = 0;
    if (!o) return;
    ca_options_defaults(&def);
    for (int i = 0; i < OPT_COUNT; i++) {
        const opt_desc *d = &opt_table[i];
        opt_value v = opt_get(o, (opt_id)i), dv = opt_get(&def, (opt_id)i);
        if (d->kind == K_EXTERNAL) continue;
        int is_default = v.choice == dv.choice && v.bytes == dv.bytes &&
                         v.percent == dv.percent && strcmp(v.path, dv.path) == 0;
        if (is_default && !(always & (1u << i)))
            continue;
        if (is_default)
            snprintf(text, sizeof text, "%s", d->default_text);
        else
            format_value(d, &v, text, sizeof text);
        int n = snprintf(buf + used, len - used, "%s%s=%s", used ? " " : "", d->key, text);
        if (n < 0 || (size_t)n >= len - used) {
            /* Whole pairs only: a cut value would read as a different setting. */
            const char *more = used ? " ..." : "...";
            buf[used] = 0;
            if (used + strlen(more) < len) memcpy(buf + used, more, strlen(more) + 1);
            return;
        }
        used += (size_t)n;
    }
}

void ca_options_summary(const ca_options *o, char *buf, size_t len) {
    describe(o, 0, buf, len);
}

void ca_options_describe(const ca_options *o, char *buf, size_t len) {
    describe(o, 1u << OPT_POOL | 1u << OPT_REUSE | 1u << OPT_LIMIT, buf, len);
}
