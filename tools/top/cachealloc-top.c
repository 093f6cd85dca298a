/* cachealloc-top: live statistics of every process that runs with libcachealloc.so.
 * Reads the segments described by stats/abi.h; never links the arena. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "format.h"
#include "live_view.h"
#include "reclaim.h"
#include "report.h"
#include "seg_scan.h"
#include "serve.h"

#define RECLAIM_WAIT_S 5

enum { MODE_LIVE, MODE_ONCE, MODE_JSON, MODE_PROM, MODE_RECLAIM, MODE_SERVE };

static void usage(FILE *out)
{
    fputs("usage: cachealloc-top [OPTION]...\n"
          "Live GPU memory-pool statistics of processes running with libcachealloc.so.\n"
          "\n"
          "  --once           print one table and exit (no terminal needed)\n"
          "  --json           print one JSON document and exit\n"
          "  --prometheus     print OpenMetrics text and exit\n"
          "  --serve [ADDR:]PORT\n"
          "                   serve /metrics to Prometheus over HTTP until stopped (ADDR\n"
          "                   127.0.0.1 unless given; 9449 is the documented port)\n"
          "  --pid PID        show only process PID\n"
          "  --delay SECONDS  refresh interval of the live view (default 1)\n"
          "  --reclaim PID    ask PID to release its cached memory; print the bytes released\n"
          "  --help           this text\n"
          "\n"
          "Keys in the live view: up/down or j/k move, s or < > change the sort column,\n"
          "r reclaims the selected process, p pauses, h or ? shows help, q quits.\n"
          "Segments are read from $" CA_STATS_DIR_ENV " (default " CA_STATS_DEFAULT_DIR ").\n",
          out);
}

static int parse_pid(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v <= 0 || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

static int do_reclaim(const char *dir, int pid)
{
    top_reclaim r;
    char why[200];
    if (top_reclaim_send(dir, pid, -1, &r, why, sizeof why) != 0) {
        fprintf(stderr, "cachealloc-top: reclaim: %s\n", why);
        return 1;
    }
    struct timespec step = {0, 20000000};
    for (int i = 0; i < RECLAIM_WAIT_S * 50; i++) {
        uint64_t bytes;
        int rc = top_reclaim_poll(&r, &bytes);
        if (rc == 1) {
            char h[32];
            printf("pid %d released %llu bytes (%s)\n", pid, (unsigned long long)bytes,
                   top_human_size(bytes, h, sizeof h));
            top_reclaim_close(&r);
            return 0;
        }
        if (rc < 0)
            break;
        nanosleep(&step, NULL);
    }
    top_reclaim_close(&r);
    fprintf(stderr, "cachealloc-top: reclaim: no answer from pid %d within %d s\n", pid,
            RECLAIM_WAIT_S);
    return 1;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"once", no_argument, NULL, 'o'},     {"json", no_argument, NULL, 'J'},
        {"prometheus", no_argument, NULL, 'P'}, {"pid", required_argument, NULL, 'p'},
        {"delay", required_argument, NULL, 'd'}, {"reclaim", required_argument, NULL, 'r'},
        {"serve", required_argument, NULL, 'S'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int mode = MODE_LIVE, pid = 0, reclaim_pid = 0, c;
    const char *serve_at = NULL;
    double delay = 1.0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': mode = MODE_ONCE; break;
        case 'J': mode = MODE_JSON; break;
        case 'P': mode = MODE_PROM; break;
        case 'p':
            if (parse_pid(optarg, &pid) != 0) {
                fprintf(stderr, "cachealloc-top: --pid wants a process id, not '%s'\n", optarg);
                return 2;
            }
            break;
        case 'd': {
            char *end;
            delay = strtod(optarg, &end);
            if (end == optarg || *end || !(delay >= 0.05 && delay <= 3600)) {
                fprintf(stderr, "cachealloc-top: --delay wants seconds from 0.05 to 3600, "
                                "not '%s'\n", optarg);
                return 2;
            }
            break;
        }
        case 'r':
            if (parse_pid(optarg, &reclaim_pid) != 0) {
                fprintf(stderr, "cachealloc-top: --reclaim wants a process id, not '%s'\n",
                        optarg);
                return 2;
            }
            mode = MODE_RECLAIM;
            break;
        case 'S':
            serve_at = optarg;
            mode = MODE_SERVE;
            break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "cachealloc-top: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    const char *dir = top_shm_dir();
    if (mode == MODE_RECLAIM)
        return do_reclaim(dir, reclaim_pid);
    if (mode == MODE_SERVE) {
        if (pid) {
            fprintf(stderr, "cachealloc-top: --serve exports every process; --pid does not "
                            "apply\n");
            return 2;
        }
        return top_serve(serve_at, dir);
    }
    if (mode == MODE_LIVE) {
        if (!isatty(STDOUT_FILENO) || !isatty(STDIN_FILENO)) {
            fprintf(stderr, "cachealloc-top: the live view needs a terminal; "
                            "use --once, --json or --prometheus\n");
            return 2;
        }
        return top_live(dir, pid, delay);
    }
    top_list l;
    if (top_scan(dir, pid, 1, &l, stderr) != 0)
        fprintf(stderr, "cachealloc-top: cannot read %s: %s\n", dir, strerror(errno));
    if (mode == MODE_ONCE)
        top_report_text(stdout, &l);
    else if (mode == MODE_JSON)
        top_report_json(stdout, &l);
    else
        top_report_prometheus(stdout, &l, 1);
    top_list_clear(&l);
    return fflush(stdout) == 0 ? 0 : 1;
}
