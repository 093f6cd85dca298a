/* Unit tests of the CACHEALLOC_* options module: values, warnings, the config and the summary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "options/options.h"

/* The outcome of one ca_options_parse call, with everything it wrote to err. */
typedef struct parsed {
    ca_options o;
    int problems;
    int lines;
    char text[8192];
} parsed;

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void parse_env(parsed *p, char *const *envp) {
    char *buf = NULL;
    size_t len = 0;
    FILE *err = open_memstream(&buf, &len);
    assert_non_null(err);
    p->problems = ca_options_parse(&p->o, envp, err);
    fclose(err);
    assert_true(len < sizeof p->text);
    memcpy(p->text, buf, len + 1);
    free(buf);
    p->lines = count_lines(p->text);
    /* Every line ends with a newline: no partial line is ever left behind. */
    assert_true(len == 0 || p->text[len - 1] == '\n');
}

/* Parse a single "NAME=value" entry. */
static void parse1(parsed *p, const char *entry) {
    char *envp[] = {(char *)entry, NULL};
    parse_env(p, envp);
}

/* One bad value: exactly one line naming it, with the default kept. */
static void expect_one_warning(const char *entry, const char *must_contain) {
    parsed p;
    ca_options def;
    ca_options_defaults(&def);
    parse1(&p, entry);
    assert_int_equal(p.problems, 1);
    assert_int_equal(p.lines, 1);
    assert_non_null(strstr(p.text, "cachealloc: "));
    assert_non_null(strstr(p.text, "accepted: "));
    assert_non_null(strstr(p.text, "using the default ("));
    if (must_contain) assert_non_null(strstr(p.text, must_contain));
    assert_memory_equal(&p.o, &def, sizeof def);
}

static void test_defaults(void **state) {
    (void)state;
    ca_options o;
    ca_options_defaults(&o);
    assert_int_equal(o.pool, CA_POOL_SPLIT);
    assert_int_equal(o.reuse, CA_REUSE_AUTO); /* each door's: sync for HIP, safe for CUDA */
    assert_int_equal(o.fences, CA_FENCES_AUTO);
    assert_true(o.expandable_piece == 0); /* auto: the arena prices its growths */
    assert_true(o.limit_bytes == 0);
    assert_int_equal(o.limit_percent, 0);
    assert_true(o.release_threshold == UINT64_MAX);
    assert_int_equal(o.release_percent, 0);
    assert_true(o.prealloc_bytes == 0);
    assert_true(o.max_split == UINT64_MAX);
    assert_int_equal(o.expandable, CA_EXPANDABLE_AUTO);
    assert_int_equal(o.pinned, 1);
    assert_true(o.pinned_limit == 0);
    assert_int_equal(o.stats, 1);
    assert_int_equal(o.leak_check, CA_LEAK_OFF);
    assert_string_equal(o.trace_path, "");
    assert_int_equal(o.verbose, 0);
}

static void test_empty_and_null_env(void **state) {
    (void)state;
    parsed p;
    ca_options def;
    char *none[] = {NULL};
    char *others[] = {"PATH=/usr/bin", "CACHEALLOCX=1", "CACHEALLOC_LIMIT", "XCACHEALLOC_POOL=1",
                      "=", "", NULL};
    ca_options_defaults(&def);
    parse_env(&p, none);
    assert_int_equal(p.problems, 0);
    assert_memory_equal(&p.o, &def, sizeof def);
    parse_env(&p, NULL);
    assert_int_equal(p.problems, 0);
    assert_memory_equal(&p.o, &def, sizeof def);
    parse_env(&p, others);
    assert_int_equal(p.problems, 0);
    assert_int_equal(p.lines, 0);
    assert_memory_equal(&p.o, &def, sizeof def);
}

static void test_good_values(void **state) {
    (void)state;
    parsed p;
    char *envp[] = {"CACHEALLOC_POOL=binned", "CACHEALLOC_REUSE=stream", "CACHEALLOC_LIMIT=6G",
                    "CACHEALLOC_RELEASE_THRESHOLD=512M", "CACHEALLOC_PREALLOC=64K",
                    "CACHEALLOC_MAX_SPLIT=32M", "CACHEALLOC_STATS=0", "CACHEALLOC_LEAK_CHECK=stacks",
                    "CACHEALLOC_TRACE=/tmp/trace.txt", "CACHEALLOC_VERBOSE=1",
                    "CACHEALLOC_SHM_DIR=/run/shm", "CACHEALLOC_NEIGHBOURS=off",
                    "CACHEALLOC_IDLE_RELEASE=30s", "CACHEALLOC_PINNED_LIMIT=2G",
                    "CACHEALLOC_EXPANDABLE_PIECE=20M", NULL};
    parse_env(&p, envp);
    assert_int_equal(p.problems, 0);
    assert_int_equal(p.lines, 0);
    assert_true(p.o.pinned_limit == 2ull << 30);
    assert_true(p.o.expandable_piece == 20ull << 20);
    /* The word auto after a size: back to the arena's choice. */
    parsed q;
    char *again[] = {"CACHEALLOC_EXPANDABLE_PIECE=Auto", NULL};
    parse_env(&q, again);
    assert_int_equal(q.problems, 0);
    assert_true(q.o.expandable_piece == 0);
    assert_int_equal(p.o.pool, CA_POOL_BINNED);
    assert_int_equal(p.o.reuse, CA_REUSE_STREAM);
    assert_true(p.o.limit_bytes == 6ull << 30);
    assert_int_equal(p.o.limit_percent, 0);
    assert_true(p.o.release_threshold == 512ull << 20);
    assert_int_equal(p.o.release_percent, 0);
    assert_true(p.o.prealloc_bytes == 64ull << 10);
    assert_true(p.o.max_split == 32ull << 20);
    assert_int_equal(p.o.stats, 0);
    assert_int_equal(p.o.leak_check, CA_LEAK_STACKS);
    assert_string_equal(p.o.trace_path, "/tmp/trace.txt");
    assert_int_equal(p.o.verbose, 1);
    assert_int_equal(p.o.neighbours, 0);
    assert_true(p.o.idle_release_s == 30);
}

static void test_choices(void **state) {
    (void)state;
    static const struct {
        const char *entry;
        size_t offset;
        int want;
    } cases[] = {
        {"CACHEALLOC_POOL=split", offsetof(ca_options, pool), CA_POOL_SPLIT},
        {"CACHEALLOC_POOL=binned", offsetof(ca_options, pool), CA_POOL_BINNED},
        {"CACHEALLOC_POOL=none", offsetof(ca_options, pool), CA_POOL_NONE},
        {"CACHEALLOC_POOL=Binned", offsetof(ca_options, pool), CA_POOL_BINNED},
        {"CACHEALLOC_REUSE=safe", offsetof(ca_options, reuse), CA_REUSE_SAFE},
        {"CACHEALLOC_REUSE=STREAM", offsetof(ca_options, reuse), CA_REUSE_STREAM},
        {"CACHEALLOC_REUSE=sync", offsetof(ca_options, reuse), CA_REUSE_SYNC},
        {"CACHEALLOC_REUSE=Auto", offsetof(ca_options, reuse), CA_REUSE_AUTO},
        {"CACHEALLOC_FENCES=events", offsetof(ca_options, fences), CA_FENCES_EVENTS},
        {"CACHEALLOC_FENCES=Device", offsetof(ca_options, fences), CA_FENCES_DEVICE},
        {"CACHEALLOC_FENCES=auto", offsetof(ca_options, fences), CA_FENCES_AUTO},
        {"CACHEALLOC_STATS=1", offsetof(ca_options, stats), 1},
        {"CACHEALLOC_STATS=0", offsetof(ca_options, stats), 0},
        {"CACHEALLOC_STATS=false", offsetof(ca_options, stats), 0},
        {"CACHEALLOC_STATS=off", offsetof(ca_options, stats), 0},
        {"CACHEALLOC_STATS=No", offsetof(ca_options, stats), 0},
        {"CACHEALLOC_STATS=TRUE", offsetof(ca_options, stats), 1},
        {"CACHEALLOC_VERBOSE=1", offsetof(ca_options, verbose), 1},
        {"CACHEALLOC_VERBOSE=on", offsetof(ca_options, verbose), 1},
        {"CACHEALLOC_VERBOSE=yes", offsetof(ca_options, verbose), 1},
        {"CACHEALLOC_VERBOSE=0", offsetof(ca_options, verbose), 0},
        {"CACHEALLOC_EXPANDABLE=1", offsetof(ca_options, expandable), 1},
        {"CACHEALLOC_EXPANDABLE=yes", offsetof(ca_options, expandable), 1},
        {"CACHEALLOC_EXPANDABLE=off", offsetof(ca_options, expandable), 0},
        {"CACHEALLOC_EXPANDABLE=Auto", offsetof(ca_options, expandable), CA_EXPANDABLE_AUTO},
        {"CACHEALLOC_PINNED=0", offsetof(ca_options, pinned), 0},
        {"CACHEALLOC_PINNED=on", offsetof(ca_options, pinned), 1},
        {"CACHEALLOC_LEAK_CHECK=0", offsetof(ca_options, leak_check), CA_LEAK_OFF},
        {"CACHEALLOC_LEAK_CHECK=1", offsetof(ca_options, leak_check), CA_LEAK_ON},
        {"CACHEALLOC_LEAK_CHECK=on", offsetof(ca_options, leak_check), CA_LEAK_ON},
        {"CACHEALLOC_LEAK_CHECK=stacks", offsetof(ca_options, leak_check), CA_LEAK_STACKS},
        {"CACHEALLOC_LEAK_CHECK=STACKS", offsetof(ca_options, leak_check), CA_LEAK_STACKS},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parsed p;
        int got;
        parse1(&p, cases[i].entry);
        assert_int_equal(p.problems, 0);
        /* Every field listed is an int or an enum of int size. */
        memcpy(&got, (const char *)&p.o + cases[i].offset, sizeof got);
        if (got != cases[i].want)
            fail_msg("%s gave %d, want %d", cases[i].entry, got, cases[i].want);
    }
}

static void test_parse_size_suffixes(void **state) {
    (void)state;
    static const struct {
        const char *s;
        uint64_t want;
    } good[] = {
        {"0", 0}, {"512", 512}, {"512B", 512}, {"512b", 512},
        {"64K", 64ull << 10}, {"64k", 64ull << 10}, {"64KB", 64ull << 10},
        {"64KiB", 64ull << 10}, {"64kib", 64ull << 10},
        {"8M", 8ull << 20}, {"8m", 8ull << 20}, {"8MiB", 8ull << 20}, {"8mb", 8ull << 20},
        {"6G", 6ull << 30}, {"6g", 6ull << 30}, {"6GB", 6ull << 30},
        {"1T", 1ull << 40}, {"1t", 1ull << 40}, {"1TiB", 1ull << 40},
        {"007M", 7ull << 20},
        {"16777215T", 16777215ull << 40},
        {"18446744073709551615", UINT64_MAX},
    };
    static const char *const bad[] = {
        "", "-1", "-1G", "+1", " 1", "1 ", "1.5G", "1Ki", "1iB", "1KK", "1X", "1GBB", "K", "B",
        "0x10", "1e9", "6Q", "1P",
        "16777216T",            /* 2^64: one past the top */
        "99999999999T",         /* overflows in the multiplication */
        "18446744073709551616", /* overflows in the digits */
        "99999999999999999999999999999",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t v = 12345;
        if (ca_parse_size(good[i].s, &v) != 0) fail_msg("\"%s\" refused", good[i].s);
        if (v != good[i].want) fail_msg("\"%s\" gave %llu", good[i].s, (unsigned long long)v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 12345;
        if (ca_parse_size(bad[i], &v) == 0) fail_msg("\"%s\" accepted", bad[i]);
        assert_true(v == 12345); /* untouched on failure */
    }
    assert_int_not_equal(ca_parse_size(NULL, &(uint64_t){0}), 0);
    assert_int_not_equal(ca_parse_size("1", NULL), 0);
}

static void test_parse_percent_bounds(void **state) {
    (void)state;
    unsigned v = 0;
    assert_int_equal(ca_parse_percent("1%", &v), 0);
    assert_int_equal(v, 1);
    assert_int_equal(ca_parse_percent("75%", &v), 0);
    assert_int_equal(v, 75);
    assert_int_equal(ca_parse_percent("100%", &v), 0);
    assert_int_equal(v, 100);
    static const char *const bad[] = {"0%", "101%", "%", "50", "-5%", "50%%", "5 %", "1.5%",
                                      "", "x%", "99999999999999999999999%", "50%x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 77;
        if (ca_parse_percent(bad[i], &v) == 0) fail_msg("\"%s\" accepted", bad[i]);
        assert_int_equal(v, 77);
    }
    assert_int_not_equal(ca_parse_percent(NULL, &v), 0);
    assert_int_not_equal(ca_parse_percent("5%", NULL), 0);
}

static void test_percent_replaces_bytes(void **state) {
    (void)state;
    parsed p;
    char *envp[] = {"CACHEALLOC_LIMIT=75%", "CACHEALLOC_RELEASE_THRESHOLD=100%", NULL};
    parse_env(&p, envp);
    assert_int_equal(p.problems, 0);
    assert_int_equal(p.o.limit_percent, 75);
    assert_true(p.o.limit_bytes == 0);
    assert_int_equal(p.o.release_percent, 100);
    assert_true(p.o.release_threshold == UINT64_MAX);

    parse1(&p, "CACHEALLOC_RELEASE_THRESHOLD=0");
    assert_int_equal(p.problems, 0);
    assert_true(p.o.release_threshold == 0);
    assert_int_equal(p.o.release_percent, 0);

    /* A percentage where only sizes make sense is refused. */
    expect_one_warning("CACHEALLOC_PREALLOC=50%", "CACHEALLOC_PREALLOC=50% is not a size");
    expect_one_warning("CACHEALLOC_MAX_SPLIT=50%", "CACHEALLOC_MAX_SPLIT=50%");
}

static void test_exact_bad_value_line(void **state) {
    (void)state;
    parsed p;
    parse1(&p, "CACHEALLOC_LIMIT=6Q");
    assert_int_equal(p.problems, 1);
    assert_string_equal(p.text,
                        "cachealloc: CACHEALLOC_LIMIT=6Q is not a size (accepted: 512, 64K, 8M, "
                        "6G, 1T or 1%..100%); using the default (no limit)\n");
}

static void test_bad_values(void **state) {
    (void)state;
    expect_one_warning("CACHEALLOC_POOL=fast", "CACHEALLOC_POOL=fast");
    expect_one_warning("CACHEALLOC_POOL=split ", "(split)");
    expect_one_warning("CACHEALLOC_REUSE=always", "(accepted: auto, safe, sync, stream); using "
                                                  "the default (auto)");
    expect_one_warning("CACHEALLOC_FENCES=never", "(auto)");
    expect_one_warning("CACHEALLOC_LIMIT=-1G", "CACHEALLOC_LIMIT=-1G is negative");
    expect_one_warning("CACHEALLOC_LIMIT=99999999999T",
                       "CACHEALLOC_LIMIT=99999999999T is too large");
    expect_one_warning("CACHEALLOC_LIMIT=8Gx", "CACHEALLOC_LIMIT=8Gx is not a size");
    expect_one_warning("CACHEALLOC_LIMIT=", "CACHEALLOC_LIMIT is empty");
    expect_one_warning("CACHEALLOC_LIMIT=0%", "1% to 100%");
    expect_one_warning("CACHEALLOC_LIMIT=101%", "CACHEALLOC_LIMIT=101%");
    expect_one_warning("CACHEALLOC_RELEASE_THRESHOLD=1.5G", "(keep all)");
    expect_one_warning("CACHEALLOC_RELEASE_THRESHOLD=-5%", "is negative");
    expect_one_warning("CACHEALLOC_PREALLOC=lots", "(0)");
    expect_one_warning("CACHEALLOC_MAX_SPLIT=20M", "is too small");
    expect_one_warning("CACHEALLOC_MAX_SPLIT=512K", "(unlimited)");
    expect_one_warning("CACHEALLOC_MAX_SPLIT=0", "is too small");
    expect_one_warning("CACHEALLOC_EXPANDABLE_PIECE=1M", "is too small");
    expect_one_warning("CACHEALLOC_EXPANDABLE_PIECE=big", "using the default (auto)");
    expect_one_warning("CACHEALLOC_EXPANDABLE=2", "CACHEALLOC_EXPANDABLE=2 is not an accepted value");
    expect_one_warning("CACHEALLOC_EXPANDABLE=expandable", "using the default (auto)");
    expect_one_warning("CACHEALLOC_PINNED=2", "CACHEALLOC_PINNED=2 is not an accepted value");
    expect_one_warning("CACHEALLOC_PINNED_LIMIT=lots", "using the default (no limit)");
    expect_one_warning("CACHEALLOC_STATS=2", "CACHEALLOC_STATS=2 is not an accepted value");
    expect_one_warning("CACHEALLOC_STATS=", "CACHEALLOC_STATS is empty");
    expect_one_warning("CACHEALLOC_LEAK_CHECK=stack", "(0)");
    expect_one_warning("CACHEALLOC_VERBOSE=-1", "CACHEALLOC_VERBOSE=-1");
    expect_one_warning("CACHEALLOC_TRACE=", "CACHEALLOC_TRACE is empty");
    expect_one_warning("CACHEALLOC_IDLE_RELEASE=soon", "is not a whole number of seconds");
    expect_one_warning("CACHEALLOC_IDLE_RELEASE=1.5", "using the default (10s)");
    expect_one_warning("CACHEALLOC_IDLE_RELEASE=-1", "is negative");
    expect_one_warning("CACHEALLOC_IDLE_RELEASE=40000000", "is too large");
    expect_one_warning("CACHEALLOC_NEIGHBOURS=maybe", "using the default (1)");
}

static void test_trace_path_too_long(void **state) {
    (void)state;
    char entry[sizeof "CACHEALLOC_TRACE=" + sizeof ((ca_options *)0)->trace_path];
    size_t pre = strlen("CACHEALLOC_TRACE=");
    size_t room = sizeof ((ca_options *)0)->trace_path;
    parsed p;
    memcpy(entry, "CACHEALLOC_TRACE=", pre);
    /* The longest path that fits, with its NUL. */
    memset(entry + pre, 'a', room - 1);
    entry[pre + room - 1] = 0;
    parse1(&p, entry);
    assert_int_equal(p.problems, 0);
    assert_int_equal(strlen(p.o.trace_path), room - 1);
    /* One more character does not fit: refused, in one short line. */
    entry[pre + room - 1] = 'a';
    entry[pre + room] = 0;
    expect_one_warning(entry, "is too long");
    parse1(&p, entry);
    assert_true(strlen(p.text) < 400);
}

static void test_hostile_value_stays_one_line(void **state) {
    (void)state;
    parsed p;
    parse1(&p, "CACHEALLOC_LIMIT=6\nG\r\x1b[2J");
    assert_int_equal(p.problems, 1);
    assert_int_equal(p.lines, 1);
    assert_null(strchr(p.text, '\r'));
    assert_null(strchr(p.text, '\x1b'));
    assert_non_null(strstr(p.text, "CACHEALLOC_LIMIT=6?G"));

    char big[3000];
    memcpy(big, "CACHEALLOC_POOL=", 16);
    memset(big + 16, 'x', sizeof big - 17);
    big[sizeof big - 1] = 0;
    parse1(&p, big);
    assert_int_equal(p.lines, 1);
    assert_non_null(strstr(p.text, "...")); /* the value is shortened, and says so */
    assert_true(strlen(p.text) < 400);
}

static void test_many_problems_one_line_each(void **state) {
    (void)state;
    parsed p;
    char *envp[] = {"CACHEALLOC_LIMIT=6Q", "CACHEALLOC_POOL=fast", "CACHEALLOC_LIMT=1G",
                    "CACHEALLOC_REUSE=stream", "CACHEALLOC_STATS=maybe", NULL};
    parse_env(&p, envp);
    assert_int_equal(p.problems, 4);
    assert_int_equal(p.lines, 4);
    assert_int_equal(p.o.reuse, CA_REUSE_STREAM); /* good values around bad ones still count */
    assert_true(p.o.limit_bytes == 0);
    assert_int_equal(p.o.pool, CA_POOL_SPLIT);
    assert_int_equal(p.o.stats, 1);
}

static void test_unknown_names(void **state) {
    (void)state;
    static const struct {
        const char *entry, *line;
    } cases[] = {
        {"CACHEALLOC_LIMT=6G",
         "cachealloc: unknown variable CACHEALLOC_LIMT (did you mean CACHEALLOC_LIMIT?); "
         "ignored\n"},
        {"CACHEALLOC_POOOL=binned",
         "cachealloc: unknown variable CACHEALLOC_POOOL (did you mean CACHEALLOC_POOL?); "
         "ignored\n"},
        {"CACHEALLOC_REUES=stream", /* a transposition */
         "cachealloc: unknown variable CACHEALLOC_REUES (did you mean CACHEALLOC_REUSE?); "
         "ignored\n"},
        {"CACHEALLOC_VEBSOE=1", /* a transposition wins over REUSE only if counted as one edit */
         "cachealloc: unknown variable CACHEALLOC_VEBSOE (did you mean CACHEALLOC_VERBOSE?); "
         "ignored\n"},
        {"CACHEALLOC_limit=6G",
         "cachealloc: unknown variable CACHEALLOC_limit (did you mean CACHEALLOC_LIMIT?); "
         "ignored\n"},
        {"CACHEALLOC_RELEASE_TRESHOLD=1G",
         "cachealloc: unknown variable CACHEALLOC_RELEASE_TRESHOLD (did you mean "
         "CACHEALLOC_RELEASE_THRESHOLD?); ignored\n"},
        {"CACHEALLOC_LEAKCHECK=1",
         "cachealloc: unknown variable CACHEALLOC_LEAKCHECK (did you mean "
         "CACHEALLOC_LEAK_CHECK?); ignored\n"},
        {"CACHEALLOC_SHMDIR=/tmp",
         "cachealloc: unknown variable CACHEALLOC_SHMDIR (did you mean CACHEALLOC_SHM_DIR?); "
         "ignored\n"},
    };
    ca_options def;
    ca_options_defaults(&def);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        parsed p;
        parse1(&p, cases[i].entry);
        assert_int_equal(p.problems, 1);
        assert_string_equal(p.text, cases[i].line);
        assert_memory_equal(&p.o, &def, sizeof def);
    }
}

static void test_unknown_name_hostile(void **state) {
    (void)state;
    parsed p;
    char big[600];
    memcpy(big, "CACHEALLOC_", 11);
    memset(big + 11, 'Z', sizeof big - 14);
    memcpy(big + sizeof big - 3, "=1", 3);
    parse1(&p, big);
    assert_int_equal(p.problems, 1);
    assert_int_equal(p.lines, 1);
    assert_true(strlen(p.text) < 300);
    assert_non_null(strstr(p.text, "did you mean CACHEALLOC_"));

    parse1(&p, "CACHEALLOC_\nX=1");
    assert_int_equal(p.lines, 1);
    parse1(&p, "CACHEALLOC_=1");
    assert_int_equal(p.problems, 1);
    assert_int_equal(p.lines, 1);
}

static void test_shm_dir_is_known(void **state) {
    (void)state;
    parsed p;
    parse1(&p, "CACHEALLOC_SHM_DIR=/some/where");
    assert_int_equal(p.problems, 0);
    assert_int_equal(p.lines, 0);
    parse1(&p, "CACHEALLOC_SHM_DIR=");
    assert_int_equal(p.problems, 0);
}

static void test_first_occurrence_wins(void **state) {
    (void)state;
    parsed p;
    char *envp[] = {"CACHEALLOC_LIMIT=1G", "CACHEALLOC_LIMIT=2G", NULL};
    parse_env(&p, envp);
    assert_int_equal(p.problems, 0);
    assert_true(p.o.limit_bytes == 1ull << 30); /* as getenv would see it */
}

static void test_parse_starts_from_defaults(void **state) {
    (void)state;
    ca_options o;
    char *first[] = {"CACHEALLOC_POOL=none", NULL};
    char *second[] = {"CACHEALLOC_POOL=oops", NULL};
    ca_options_parse(&o, first, NULL);
    assert_int_equal(o.pool, CA_POOL_NONE);
    /* err NULL: silent, still counted, and the warning's "default" is really the default. */
    assert_int_equal(ca_options_parse(&o, second, NULL), 1);
    assert_int_equal(o.pool, CA_POOL_SPLIT);
    assert_int_equal(ca_options_parse(NULL, first, NULL), 0);
}

static void test_to_config(void **state) {
    (void)state;
    parsed p;
    ca_config c;
    char *envp[] = {"CACHEALLOC_POOL=none", "CACHEALLOC_REUSE=stream", "CACHEALLOC_LIMIT=50%",
                    "CACHEALLOC_RELEASE_THRESHOLD=2G", "CACHEALLOC_PREALLOC=1G",
                    "CACHEALLOC_MAX_SPLIT=21M", "CACHEALLOC_LEAK_CHECK=1",
                    "CACHEALLOC_TRACE=t.txt", "CACHEALLOC_EXPANDABLE=1", NULL};
    parse_env(&p, envp);
    assert_int_equal(p.problems, 0);
    memset(&c, 0xa5, sizeof c);
    ca_options_to_config(&p.o, &c);
    assert_int_equal(c.pool, CA_POOL_NONE);
    assert_int_equal(c.reuse, CA_REUSE_STREAM);
    assert_true(c.limit_bytes == 0);
    assert_int_equal(c.limit_percent, 50);
    assert_true(c.release_threshold == 2ull << 30);
    assert_int_equal(c.release_percent, 0);
    assert_true(c.prealloc_bytes == 1ull << 30);
    assert_true(c.max_split == 21ull << 20);
    assert_int_equal(c.expandable, 1);
    assert_int_equal(c.record_alloc_times, 1);
    assert_int_equal(c.record_stacks, 0);
    assert_null(c.trace);
    assert_null(c.trace_ctx);
    assert_int_equal(c.quiet, 0);

    parse1(&p, "CACHEALLOC_LEAK_CHECK=stacks");
    ca_options_to_config(&p.o, &c);
    assert_int_equal(c.record_alloc_times, 1);
    assert_int_equal(c.record_stacks, 1);

    parse1(&p, "CACHEALLOC_REUSE=sync");
    ca_options_to_config(&p.o, &c);
    assert_int_equal(c.reuse, CA_REUSE_SYNC);

    ca_options_defaults(&p.o);
    ca_options_to_config(&p.o, &c);
    assert_int_equal(c.pool, CA_POOL_SPLIT);
    assert_int_equal(c.reuse, CA_REUSE_SAFE); /* auto: the shim sets each door's */
    assert_true(c.limit_bytes == 0);
    assert_true(c.release_threshold == UINT64_MAX);
    assert_true(c.max_split == UINT64_MAX);
    assert_int_equal(c.expandable, CA_EXPANDABLE_AUTO);
    assert_int_equal(c.record_alloc_times, 0);
    assert_int_equal(c.record_stacks, 0);

    ca_options_to_config(NULL, &c); /* bad input never crashes */
    ca_options_to_config(&p.o, NULL);
}

static void test_summary(void **state) {
    (void)state;
    parsed p;
    char buf[512];
    ca_options o;

    ca_options_defaults(&o);
    memset(buf, 'x', sizeof buf);
    ca_options_summary(&o, buf, sizeof buf);
    assert_string_equal(buf, "");

    /* Options set to their default value are not listed. */
    char *same[] = {"CACHEALLOC_POOL=split", "CACHEALLOC_STATS=yes", NULL};
    parse_env(&p, same);
    ca_options_summary(&p.o, buf, sizeof buf);
    assert_string_equal(buf, "");

    char *envp[] = {"CACHEALLOC_POOL=binned", "CACHEALLOC_REUSE=stream", "CACHEALLOC_LIMIT=6G",
                    "CACHEALLOC_RELEASE_THRESHOLD=75%", "CACHEALLOC_PREALLOC=1536M",
                    "CACHEALLOC_MAX_SPLIT=1000000000", "CACHEALLOC_STATS=off",
                    "CACHEALLOC_LEAK_CHECK=stacks", "CACHEALLOC_TRACE=/tmp/t",
                    "CACHEALLOC_VERBOSE=true", "CACHEALLOC_SHM_DIR=/x", NULL};
    parse_env(&p, envp);
    assert_int_equal(p.problems, 0);
    ca_options_summary(&p.o, buf, sizeof buf);
    assert_string_equal(buf, "pool=binned reuse=stream limit=6G release_threshold=75% "
                             "prealloc=1536M max_split=1000000000 stats=0 leak_check=stacks "
                             "trace=/tmp/t verbose=1");

    parse1(&p, "CACHEALLOC_LIMIT=1T");
    ca_options_summary(&p.o, buf, sizeof buf);
    assert_string_equal(buf, "limit=1T");
    parse1(&p, "CACHEALLOC_EXPANDABLE=on");
    ca_options_summary(&p.o, buf, sizeof buf);
    assert_string_equal(buf, "expandable=1");
    parse1(&p, "CACHEALLOC_RELEASE_THRESHOLD=0");
    ca_options_summary(&p.o, buf, sizeof buf);
    assert_string_equal(buf, "release_threshold=0");
    parse1(&p, "CACHEALLOC_TRACE=/tmp/a\nb");
    ca_options_summary(&p.o, buf, sizeof buf);
    assert_string_equal(buf, "trace=/tmp/a?b"); /* safe to print on a terminal */
    parse1(&p, "CACHEALLOC_PREALLOC=1025");
    ca_options_summary(&p.o, buf, sizeof buf);
    assert_string_equal(buf, "prealloc=1025");
}

static void test_summary_round_trips(void **state) {
    (void)state;
    parsed p, q;
    char buf[512], entry[600];
    char *envp[] = {"CACHEALLOC_LIMIT=3K", "CACHEALLOC_PREALLOC=7T", "CACHEALLOC_MAX_SPLIT=5G",
                    "CACHEALLOC_RELEASE_THRESHOLD=123456789", NULL};
    parse_env(&p, envp);
    ca_options_summary(&p.o, buf, sizeof buf);
    /* Each printed size parses back to the same number. */
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        assert_non_null(eq);
        *eq = 0;
        char upper[64];
        size_t i = 0;
        for (; tok[i] && i < sizeof upper - 1; i++)
            upper[i] = (char)(tok[i] >= 'a' && tok[i] <= 'z' ? tok[i] - 32 : tok[i]);
        upper[i] = 0;
        snprintf(entry, sizeof entry, "CACHEALLOC_%s=%s", upper, eq + 1);
        parse1(&q, entry);
        assert_int_equal(q.problems, 0);
    }
    ca_options_summary(&p.o, buf, sizeof buf);
    assert_string_equal(buf, "limit=3K release_threshold=123456789 prealloc=7T max_split=5G");
}

static void test_summary_small_buffer(void **state) {
    (void)state;
    parsed p;
    char buf[64];
    char *envp[] = {"CACHEALLOC_POOL=binned", "CACHEALLOC_REUSE=stream", "CACHEALLOC_LIMIT=6G",
                    "CACHEALLOC_TRACE=/a/rather/long/path/to/a/trace/file.txt", NULL};
    parse_env(&p, envp);
    /* Whole pairs only, then a marker that something was left out. */
    ca_options_summary(&p.o, buf, 40);
    assert_string_equal(buf, "pool=binned reuse=stream limit=6G ...");
    ca_options_summary(&p.o, buf, 15);
    assert_string_equal(buf, "pool=binned");
    ca_options_summary(&p.o, buf, 5);
    assert_string_equal(buf, "...");
    ca_options_summary(&p.o, buf, 3);
    assert_string_equal(buf, "");
    buf[0] = 'q';
    ca_options_summary(&p.o, buf, 0);
    assert_int_equal(buf[0], 'q');
    ca_options_summary(&p.o, NULL, 10);
    ca_options_summary(NULL, buf, sizeof buf);
    assert_string_equal(buf, "");
}

/* The launcher's check of one value agrees with the parser and says what is accepted. */
static void test_check_one_value(void **state) {
    (void)state;
    char why[256];
    assert_int_equal(ca_options_check("CACHEALLOC_LIMIT", "6G", why, sizeof why), 0);
    assert_string_equal(why, "");
    assert_int_equal(ca_options_check("CACHEALLOC_LIMIT", "75%", why, sizeof why), 0);
    assert_int_equal(ca_options_check("CACHEALLOC_POOL", "BINNED", why, sizeof why), 0);
    assert_int_equal(ca_options_check("CACHEALLOC_LEAK_CHECK", "stacks", why, sizeof why), 0);
    assert_int_equal(ca_options_check("CACHEALLOC_LIMIT", "6Q", why, sizeof why), -1);
    assert_string_equal(why, "'6Q' is not a size (accepted: 512, 64K, 8M, 6G, 1T or 1%..100%)");
    assert_int_equal(ca_options_check("CACHEALLOC_POOL", "big", why, sizeof why), -1);
    assert_non_null(strstr(why, "accepted: split, binned, none"));
    assert_int_equal(ca_options_check("CACHEALLOC_MAX_SPLIT", "1M", why, sizeof why), -1);
    assert_non_null(strstr(why, "is too small"));
    assert_int_equal(ca_options_check("CACHEALLOC_PREALLOC", "", why, sizeof why), -1);
    assert_string_equal(why, "the value is empty (accepted: 512, 64K, 8M, 6G, 1T)");
    assert_int_equal(ca_options_check("CACHEALLOC_LIMT", "6G", why, sizeof why), -1);
    assert_string_equal(why, "CACHEALLOC_LIMT is not a known variable");
    /* A hostile value stays on one line; a small buffer is cut, never overrun. */
    assert_int_equal(ca_options_check("CACHEALLOC_REUSE", "a\nb\x1b", why, sizeof why), -1);
    assert_null(strchr(why, '\n'));
    char tiny[8];
    assert_int_equal(ca_options_check("CACHEALLOC_LIMIT", "6Q", tiny, sizeof tiny), -1);
    assert_int_equal(strlen(tiny), sizeof tiny - 1);
    assert_int_equal(ca_options_check(NULL, "1", why, sizeof why), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_empty_and_null_env),
        cmocka_unit_test(test_good_values),
        cmocka_unit_test(test_choices),
        cmocka_unit_test(test_parse_size_suffixes),
        cmocka_unit_test(test_parse_percent_bounds),
        cmocka_unit_test(test_percent_replaces_bytes),
        cmocka_unit_test(test_exact_bad_value_line),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_trace_path_too_long),
        cmocka_unit_test(test_hostile_value_stays_one_line),
        cmocka_unit_test(test_many_problems_one_line_each),
        cmocka_unit_test(test_unknown_names),
        cmocka_unit_test(test_unknown_name_hostile),
        cmocka_unit_test(test_shm_dir_is_known),
        cmocka_unit_test(test_first_occurrence_wins),
        cmocka_unit_test(test_parse_starts_from_defaults),
        cmocka_unit_test(test_to_config),
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_summary_round_trips),
        cmocka_unit_test(test_summary_small_buffer),
        cmocka_unit_test(test_check_one_value),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
