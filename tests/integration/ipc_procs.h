/* ipc_procs.h: what the interprocess tests that run several peers at once share (ipc_crash.c,
 * ipc_load.c, ipc_pieces.c): this program started again in another role with chosen pipe
 * ends, lines over pipes, words written and checked at an offset of a block, a block lying
 * over many driver mappings of an expandable segment, and the simulator's counters read from
 * any thread. Header-only. */
#ifndef CA_TEST_IPC_PROCS_H
#define CA_TEST_IPC_PROCS_H

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu_ipc.h"
#include "ipc_peer.h"

#define IPC_PIECE (2 << 20) /* what one growth of an expandable range maps */
#define IPC_WORDS 16        /* the words put_words writes */

static inline double ipc_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Starts this program again with args (args[0] its name, NULL-terminated); the descriptors at
 * keep (made O_CLOEXEC, as every pipe here is) stay open in it, and no other pipe end does. */
static inline pid_t ipc_spawn(char *const args[], const int *keep, int nkeep)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    for (int i = 0; i < nkeep; i++)
        fcntl(keep[i], F_SETFD, 0);
    execv("/proc/self/exe", args);
    _exit(127);
}

/* How pid ended: its exit status, or 128 + the signal that ended it. */
static inline int ipc_status(pid_t pid)
{
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A pipe whose two ends close at exec, but for those ipc_spawn keeps. */
static inline void ipc_pipe(int p[2])
{
    EXPECT(pipe2(p, O_CLOEXEC) == 0);
}

/* A descriptor's number as a program argument. */
#define IPC_FD_ARG(buf, fd) (snprintf((buf), sizeof(buf), "%d", (fd)), (buf))

/* Writes s and a newline in one write (a line under PIPE_BUF arrives whole). */
static inline void ipc_send_line(int fd, const char *s)
{
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%s\n", s);
    EXPECT(n > 0 && n < (int)sizeof buf && write(fd, buf, (size_t)n) == n);
}

/* Reads a line into buf without its newline (what does not fit is dropped): 0, or -1 at the
 * end of the pipe. */
static inline int ipc_read_line(int fd, char *buf, size_t size)
{
    size_t n = 0;
    for (;;) {
        char c;
        if (read(fd, &c, 1) != 1)
            return -1;
        if (c == '\n')
            break;
        if (n + 1 < size)
            buf[n++] = c;
    }
    buf[n] = '\0';
    return 0;
}

/* Sends a handle as a line of hex, and reads one back. */
static inline void ipc_send_handle(int fd, const gpuIpcMemHandle_t *h)
{
    char hex[2 * IPC_PEER_HANDLE + 1];
    ipc_peer_hex(h, hex);
    ipc_send_line(fd, hex);
}

static inline int ipc_read_handle(int fd, gpuIpcMemHandle_t *h)
{
    char hex[2 * IPC_PEER_HANDLE + 1];
    return ipc_read_line(fd, hex, sizeof hex) == 0 ? ipc_peer_unhex(hex, h) : -1;
}

static inline void seed_words(uint32_t seed, uint32_t w[IPC_WORDS])
{
    for (uint32_t i = 0; i < IPC_WORDS; i++)
        w[i] = seed * 2654435761u + i;
}

/* Writes seed's words at byte off of the device memory at base. */
static inline void put_words(void *base, size_t off, uint32_t seed)
{
    uint32_t w[IPC_WORDS];
    seed_words(seed, w);
    CHECK(gpuMemcpy((char *)base + off, w, sizeof w, gpuMemcpyDefault));
}

/* Whether byte off of the device memory at base starts with seed's words. */
static inline int has_words(const void *base, size_t off, uint32_t seed)
{
    uint32_t w[IPC_WORDS], want[IPC_WORDS];
    seed_words(seed, want);
    CHECK(gpuMemcpy(w, (const char *)base + off, sizeof w, gpuMemcpyDefault));
    return memcmp(w, want, sizeof w) == 0;
}

/* A block over n mappings of an expandable range: n blocks of IPC_PIECE allocated one after
 * another, each growing the range by a mapping of its own, then freed (they merge) and
 * allocated again as one block. Made first in a process, before anything else grows it. */
static inline void *ipc_block_over(int n)
{
    void **p = calloc((size_t)n, sizeof *p), *big = NULL;
    EXPECT(p);
    for (int k = 0; k < n; k++)
        CHECK(gpuMalloc(&p[k], IPC_PIECE));
    for (int k = 0; k < n; k++) {
        EXPECT(p[k] == (char *)p[0] + (size_t)k * IPC_PIECE); /* one growth after another */
        CHECK(gpuFree(p[k]));
    }
    CHECK(gpuMalloc(&big, (size_t)n * IPC_PIECE));
    EXPECT(big == p[0]); /* over all those mappings */
    free(p);
    return big;
}

/* Lets the cache and the driver open what they keep open, so that counting descriptors
 * afterwards counts only the exchange's. */
static inline void ipc_warm_up(void)
{
    void *p = NULL;
    CHECK(gpuMalloc(&p, 4096));
    CHECK(gpuFree(p));
}

/* The simulator's counters function, callable from any thread (it takes the simulator's
 * lock); exits with 77 off the simulator. */
static inline simdev_get_counters_fn ipc_counters_fn(void)
{
    (void)sim_counters(0); /* exits 77 off the simulator; loads it if need be */
    void *sym = simdev_sym("simdev_get_counters");
    simdev_get_counters_fn f;
    EXPECT(sym);
    memcpy(&f, &sym, sizeof f);
    return f;
}

#endif
