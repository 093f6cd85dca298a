/* cachealloc: run a program with libcachealloc.so preloaded and the CACHEALLOC_* variables
 * its options name. It execs the program, so the exit status and a death by signal are the
 * program's own. Exit statuses of its own: 2 usage, 125 the launcher failed, 126 the program
 * cannot be run, 127 it was not found (as env(1) and the shell). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launch_env.h"
#include "launch_find.h"
#include "options/options.h"

#ifndef CA_VERSION
#define CA_VERSION "unknown"
#endif

enum { EXIT_USAGE = 2, EXIT_LAUNCHER = 125, EXIT_CANNOT_RUN = 126, EXIT_NOT_FOUND = 127 };

/* One option per variable. `fixed`: the value a flag sets (or an optional value's default). */
typedef struct knob {
    const char *option;
    int has_arg;
    const char *var;
    const char *fixed;
    const char *arg; /* as the help shows it */
    const char *help;
} knob;

static const knob knobs[] = {
    {"limit", required_argument, "CACHEALLOC_LIMIT", NULL, " SIZE|N%",
     "most memory the cache may reserve per device"},
    {"pool", required_argument, "CACHEALLOC_POOL", NULL, " split|binned|none",
     "how free blocks are kept"},
    {"reuse", required_argument, "CACHEALLOC_REUSE", NULL, " auto|safe|sync|stream",
     "when a freed block may be reused"},
    {"prealloc", required_argument, "CACHEALLOC_PREALLOC", NULL, " SIZE",
     "reserve this much per device at first use"},
    {"release-threshold", required_argument, "CACHEALLOC_RELEASE_THRESHOLD", NULL, " SIZE|N%",
     "cached bytes kept per device"},
    {"max-split", required_argument, "CACHEALLOC_MAX_SPLIT", NULL, " SIZE",
     "blocks this large are never split (above 20M)"},
    {"trace", required_argument, "CACHEALLOC_TRACE", NULL, " FILE",
     "write every allocation event to FILE (CSV)"},
    {"leak-check", optional_argument, "CACHEALLOC_LEAK_CHECK", "1", "[=stacks]",
     "list allocations never freed, at exit"},
    {"no-stats", no_argument, "CACHEALLOC_STATS", "0", "",
     "no statistics for cachealloc-top"},
    {"verbose", no_argument, "CACHEALLOC_VERBOSE", "1", "",
     "say what serves the program, and a summary"},
};
#define NKNOBS (sizeof knobs / sizeof *knobs)
#define OPT_HELP 'h'
#define OPT_VERSION 'V'

static void usage(FILE *out)
{
    fputs("usage: cachealloc [OPTION]... [--] PROGRAM [ARGUMENT]...\n"
          "Run PROGRAM with libcachealloc.so, the caching allocator of GPU memory.\n\n", out);
    for (size_t i = 0; i < NKNOBS; i++) {
        char word[64];
        snprintf(word, sizeof word, "--%s%s", knobs[i].option, knobs[i].arg);
        fprintf(out, "  %-28s %s\n", word, knobs[i].help);
    }
    fprintf(out, "  %-28s %s\n  %-28s %s\n\n", "--help", "this text", "--version",
            "the version");
    fputs("Each option sets the CACHEALLOC_* variable of its name (cachealloc(1));\n"
          "--opt=value works too. LD_PRELOAD keeps the entries it had. Exit status: the\n"
          "program's own; 2 for a usage error, 125 when the library is not found, 126 when\n"
          "PROGRAM cannot run, 127 when it is not found.\n", out);
    /* From the library's own table, so that the list and its defaults are what it reads. The
     * accepted values are in cachealloc(1), and in the line a bad value gets. */
    fprintf(out, "\nThe variables the library reads (set by the options above or by hand):\n"
                 "  %-29s %s\n", "variable", "default");
    const char *name, *def;
    for (int i = 0; ca_options_entry(i, &name, NULL, &def) == 0; i++)
        fprintf(out, "  %-29s %s\n", name, def);
}

/* A relative trace file is made absolute: the program may change directory before its first
 * allocation opens it. */
static const char *absolute_path(const char *path, char *buf, size_t len)
{
    char cwd[PATH_MAX];
    if (path[0] == '/' || path[0] == '\0' || getcwd(cwd, sizeof cwd) == NULL)
        return path;
    int n = snprintf(buf, len, "%s/%s", cwd, path);
    return n > 0 && (size_t)n < len ? buf : path;
}

/* How many options the long option word (--xyz or --xyz=v) abbreviates. */
static int matches(const char *word, const struct option *opts)
{
    if (strncmp(word, "--", 2) != 0)
        return 0;
    size_t n = strcspn(word + 2, "=");
    int count = 0;
    for (; opts->name != NULL; opts++)
        count += strncmp(opts->name, word + 2, n) == 0;
    return count;
}

/* The option word as the user typed it, for messages. */
static const char *typed(char **argv, int index)
{
    return index > 0 && argv[index - 1] != NULL ? argv[index - 1] : "?";
}

/* Parse the options into values[] (NULL: not given). Returns the index of PROGRAM, or -1
 * after printing the one line that says what was wrong (and then *status). */
static int parse_args(int argc, char **argv, const char *values[NKNOBS], int *status)
{
    struct option opts[NKNOBS + 3];
    for (size_t i = 0; i < NKNOBS; i++)
        opts[i] = (struct option){knobs[i].option, knobs[i].has_arg, NULL, (int)(256 + i)};
    opts[NKNOBS] = (struct option){"help", no_argument, NULL, OPT_HELP};
    opts[NKNOBS + 1] = (struct option){"version", no_argument, NULL, OPT_VERSION};
    opts[NKNOBS + 2] = (struct option){NULL, 0, NULL, 0};
    opterr = 0; /* our own one-line messages */
    int c;
    /* '+': stop at PROGRAM, whose own options are its business; ':': tell a missing value. */
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        if (c == OPT_HELP) {
            usage(stdout);
            *status = 0;
            return -1;
        }
        if (c == OPT_VERSION) {
            printf("cachealloc %s\n", CA_VERSION);
            *status = 0;
            return -1;
        }
        *status = EXIT_USAGE;
        if (c == ':') {
            fprintf(stderr, "cachealloc: option %s needs a value (try cachealloc --help)\n",
                    typed(argv, optind));
            return -1;
        }
        if (c == '?') {
            char shortopt[3] = {'-', (char)optopt, '\0'};
            const char *word = optopt > 0 && optopt < 256 ? shortopt : typed(argv, optind);
            fprintf(stderr, "cachealloc: %s option %s (try cachealloc --help)\n",
                    matches(word, opts) > 1 ? "ambiguous" : "unknown", word);
            return -1;
        }
        size_t k = (size_t)(c - 256);
        values[k] = optarg != NULL ? optarg : knobs[k].fixed;
    }
    if (optind >= argc) {
        fprintf(stderr, "cachealloc: no program to run (usage: cachealloc [OPTION]... [--] "
                        "PROGRAM [ARGUMENT]...)\n");
        *status = EXIT_USAGE;
        return -1;
    }
    return optind;
}

/* Set every given variable after checking its value as the library would read it. */
static int set_variables(const char *values[NKNOBS])
{
    static char trace_buf[PATH_MAX + 1];
    for (size_t i = 0; i < NKNOBS; i++) {
        const char *v = values[i];
        char why[256];
        if (v == NULL)
            continue;
        if (strcmp(knobs[i].var, "CACHEALLOC_TRACE") == 0)
            v = absolute_path(v, trace_buf, sizeof trace_buf);
        if (ca_options_check(knobs[i].var, v, why, sizeof why) != 0) {
            fprintf(stderr, "cachealloc: --%s: %s\n", knobs[i].option, why);
            return EXIT_USAGE;
        }
        if (setenv(knobs[i].var, v, 1) != 0) {
            fprintf(stderr, "cachealloc: cannot set %s: %s\n", knobs[i].var, strerror(errno));
            return EXIT_LAUNCHER;
        }
    }
    return 0;
}

static int set_preload(void)
{
    char dir[PATH_MAX], lib[PATH_MAX], why[2 * PATH_MAX + 64];
    if (ca_launch_self_dir(dir, sizeof dir) != 0) {
        fprintf(stderr, "cachealloc: cannot tell where this launcher is (/proc/self/exe)\n");
        return EXIT_LAUNCHER;
    }
    if (ca_launch_find_library(dir, lib, sizeof lib, why, sizeof why) != 0) {
        fprintf(stderr, "cachealloc: %s\n", why);
        return EXIT_LAUNCHER;
    }
    /* ld.so splits LD_PRELOAD at these: such a path cannot be preloaded at all. */
    if (strpbrk(lib, ": \t\n") != NULL) {
        fprintf(stderr, "cachealloc: cannot preload %s: LD_PRELOAD cannot name a path with a "
                        "colon or a space\n", lib);
        return EXIT_LAUNCHER;
    }
    char *value = ca_launch_preload(lib, getenv("LD_PRELOAD"));
    if (value == NULL || setenv("LD_PRELOAD", value, 1) != 0) {
        fprintf(stderr, "cachealloc: cannot set LD_PRELOAD: %s\n", strerror(errno));
        free(value);
        return EXIT_LAUNCHER;
    }
    free(value);
    return 0;
}

int main(int argc, char **argv)
{
    const char *values[NKNOBS] = {0};
    int status = 0;
    int prog = parse_args(argc, argv, values, &status);
    if (prog < 0)
        return status;
    if ((status = set_variables(values)) != 0 || (status = set_preload()) != 0)
        return status;
    execvp(argv[prog], argv + prog);
    int e = errno;
    if (e == ENOENT || e == ENOTDIR) {
        fprintf(stderr, "cachealloc: %s: %s\n", argv[prog],
                strchr(argv[prog], '/') ? strerror(e) : "command not found");
        return EXIT_NOT_FOUND;
    }
    fprintf(stderr, "cachealloc: cannot run %s: %s\n", argv[prog], strerror(e));
    return EXIT_CANNOT_RUN;
}
