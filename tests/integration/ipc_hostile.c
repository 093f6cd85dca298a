/* ipc_hostile.c: peers of the cache's IPC exchange (shim/ipc/mapped.c) that do not follow it.
 * Each mode shows that neither side is misled or held up, that no descriptor is leaked, and
 * that a good import still works afterwards:
 *   "impostor"  this process opens a record naming another process (its parent) while a child
 *               of its own listens at the name the record gives: the open must be refused with
 *               GPU_IPC_REFUSED before anything is asked of the impostor (SO_PEERCRED);
 *   "silent"    a client connects to the exporter and never sends while a real importer opens
 *               a block: the open takes well under the exporter's 2 s timeout, and the silent
 *               client is dropped once that timeout ends;
 *   "bad"       requests sent by hand (truncated, oversized, with descriptors, not the cache's,
 *               naming a freed block, a place inside a block, no block, no runtime) are each
 *               answered GPU_IPC_REFUSED; the importer is refused a freed block's record, then
 *               opens a live one.
 * The record's layout, the socket's name and the messages are shim/ipc/mapped.c's: the pid at
 * byte 16, the runtime at 20, the nonce at 24, the block at 32; a request is 56 bytes. */
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>

#include "gpu_ipc.h"
#include "ipc_peer.h"
#include "ipc/wire.h"
#include "open_fds.h"

#define SIZE (4 << 20)
#define WORD 0x5eed1e55u
#define REQUEST 56

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The exporter's socket name for the record's pid and nonce. */
static socklen_t name_of(const unsigned char *rec, struct sockaddr_un *sa)
{
    int32_t pid;
    uint64_t nonce;
    memcpy(&pid, rec + 16, sizeof pid);
    memcpy(&nonce, rec + 24, sizeof nonce);
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    int len = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1, "cachealloc-ipc.%u.%d.%016llx",
                       (unsigned)geteuid(), (int)pid, (unsigned long long)nonce);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
}

/* A socket connected to the exporter the record names. */
static int connect_to(const unsigned char *rec)
{
    struct sockaddr_un sa;
    socklen_t len = name_of(rec, &sa);
    int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    EXPECT(c >= 0 && connect(c, (struct sockaddr *)&sa, len) == 0);
    struct timeval tv = {5, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return c;
}

/* Lets the cache and the driver open what they keep open, so that counting descriptors
 * afterwards counts only the exchange's. */
static void warm_up(void)
{
    void *p = NULL;
    CHECK(gpuMalloc(&p, 4096));
    CHECK(gpuFree(p));
}

/* The importer: refused the freed block's record when one is given, then opens the live one
 * (within a second with "timed"), reads the exporter's word and writes its own back. */
static int importer(const char *hex, const char *extra)
{
    gpuIpcMemHandle_t h, freed;
    void *p = NULL;
    uint32_t w = 0;
    EXPECT(ipc_peer_unhex(hex, &h) == 0);
    warm_up();
    if (ipc_peer_unhex(extra, &freed) == 0) {
        int fds = open_fds();
        EXPECT(gpuIpcOpenMemHandle(&p, freed) == GPU_IPC_REFUSED);
        (void)gpuGetLastError();
        EXPECT(open_fds() == fds);
    }
    double t0 = now();
    CHECK(gpuIpcOpenMemHandle(&p, h));
    double took = now() - t0;
    if (strcmp(extra, "timed") == 0 && took >= 1.0) {
        fprintf(stderr, "importer: the open took %.2f s behind a silent client\n", took);
        return 4;
    }
    CHECK(gpuMemcpy(&w, p, sizeof w, gpuMemcpyDefault));
    EXPECT(w == WORD);
    w = WORD + 1;
    CHECK(gpuMemcpy(p, &w, sizeof w, gpuMemcpyDefault));
    CHECK(gpuIpcCloseMemHandle(p));
    return 0;
}

/* The impostor: listens at the name, accepts one connection, and answers a request (should
 * one come) with a success code no exporter sends. Exits 0 when the importer left without
 * asking, 1 when it asked. */
static pid_t impostor(const unsigned char *rec, int ready)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    struct sockaddr_un sa;
    socklen_t len = name_of(rec, &sa);
    int l = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&sa, len) != 0 || listen(l, 1) != 0 ||
        write(ready, "", 1) != 1)
        _exit(2);
    int c = accept(l, NULL, NULL);
    struct timeval tv = {5, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char q[REQUEST + 8];
    ssize_t got = c < 0 ? -1 : recv(c, q, sizeof q, 0);
    if (got == 0)
        _exit(0);
    ca_ipc_head h = {.status = 2};
    (void)send(c, &h, sizeof h, MSG_NOSIGNAL);
    _exit(got > 0 ? 1 : 3);
}

static int impostor_mode(void)
{
    warm_up();
    unsigned char rec[IPC_PEER_HANDLE] = "cachealloc-ipc2";
    int32_t other = (int32_t)getppid(); /* neither this process nor the impostor */
    uint64_t nonce = 0x1badc0de00000000ull ^ (uint64_t)getpid(), block = 1ull << 40;
    uint64_t size = 4096;
    memcpy(rec + 16, &other, sizeof other);
    memcpy(rec + 24, &nonce, sizeof nonce);
    memcpy(rec + 32, &block, sizeof block);
    memcpy(rec + 40, &size, sizeof size);
    int ready[2], st = 0;
    char b;
    EXPECT(pipe(ready) == 0);
    pid_t pid = impostor(rec, ready[1]);
    EXPECT(pid > 0 && read(ready[0], &b, 1) == 1);
    close(ready[0]);
    close(ready[1]);
    int fds = open_fds();
    gpuIpcMemHandle_t h;
    void *p = NULL;
    memcpy(&h, rec, sizeof h);
    gpuError_t e = gpuIpcOpenMemHandle(&p, h);
    (void)gpuGetLastError();
    EXPECT(open_fds() == fds);
    EXPECT(waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    if (e != GPU_IPC_REFUSED || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "impostor: the open returned %d; the impostor %s\n", (int)e,
                WEXITSTATUS(st) == 1 ? "was asked" : "failed");
        return 1;
    }
    printf("ipc: a record's name bound by another process is refused unasked\n");
    return 0;
}

/* A client that connects and never sends: exits 0 once the exporter dropped it, at least a
 * second and at most five after it connected (the exporter's timeout is 2 s). */
static pid_t silent(const unsigned char *rec, int ready)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int c = connect_to(rec);
    double t0 = now();
    char b;
    if (write(ready, "", 1) != 1)
        _exit(2);
    ssize_t got = recv(c, &b, 1, 0); /* the exporter's error answer, then the end */
    while (got > 0)
        got = recv(c, &b, 1, 0);
    double took = now() - t0;
    _exit(got == 0 && took >= 1.0 && took < 5.0 ? 0 : 3);
}

/* Sends len bytes of msg, with one descriptor attached when fd >= 0, and expects the answer
 * GPU_IPC_REFUSED with no descriptor, then the end of the connection. */
static void refused(const char *what, const void *msg, size_t len, int fd)
{
    int c = connect_to(msg);
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {(void *)msg, len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&ctl, 0, sizeof ctl);
        m.msg_control = ctl.buf;
        m.msg_controllen = sizeof ctl.buf;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    }
    EXPECT(sendmsg(c, &m, 0) == (ssize_t)len);
    ca_ipc_head h;
    char more;
    struct iovec riov = {&h, sizeof h};
    struct msghdr r = {.msg_iov = &riov, .msg_iovlen = 1, .msg_control = ctl.buf,
                       .msg_controllen = sizeof ctl.buf};
    ssize_t got = recvmsg(c, &r, 0);
    if (got != (ssize_t)sizeof h || r.msg_controllen != 0 || h.status != (uint32_t)GPU_IPC_REFUSED ||
        recv(c, &more, 1, 0) != 0) {
        fprintf(stderr, "bad request %s: answered %zd bytes, status %u\n", what, got,
                got == (ssize_t)sizeof h ? h.status : 0);
        exit(1);
    }
    close(c);
}

/* Every bad request of the list in this file's comment, against the live record at live and
 * the freed one at freed. */
static void bad_requests(const unsigned char *live, const unsigned char *freed)
{
    unsigned char q[IPC_PEER_HANDLE + 8];
    uint64_t block;
    int32_t slot = 7;
    int pipefd[2];
    memcpy(q, live, IPC_PEER_HANDLE);
    refused("truncated", q, 20, -1);
    refused("oversized", q, REQUEST + 8, -1);
    EXPECT(pipe(pipefd) == 0);
    refused("with a descriptor", q, REQUEST, pipefd[0]);
    close(pipefd[0]);
    close(pipefd[1]);
    q[0] ^= 1;
    refused("not the cache's", q, REQUEST, -1);
    refused("naming a freed block", freed, REQUEST, -1);
    memcpy(q, live, IPC_PEER_HANDLE);
    memcpy(&block, q + 32, sizeof block);
    block += 4096;
    memcpy(q + 32, &block, sizeof block);
    refused("inside a block", q, REQUEST, -1);
    block = 4096;
    memcpy(q + 32, &block, sizeof block);
    refused("naming no block", q, REQUEST, -1);
    memcpy(q, live, IPC_PEER_HANDLE);
    memcpy(q + 20, &slot, sizeof slot);
    refused("naming no runtime", q, REQUEST, -1);
}

static int exporter(int bad)
{
    void *p = NULL, *gone = NULL;
    uint32_t w = WORD;
    gpuIpcMemHandle_t h, hf;
    char hex[2 * IPC_PEER_HANDLE + 1] = "timed";
    CHECK(gpuMalloc(&p, SIZE));
    CHECK(gpuMemcpy(p, &w, sizeof w, gpuMemcpyDefault));
    CHECK(gpuIpcGetMemHandle(&h, p));
    if (bad) {
        CHECK(gpuMalloc(&gone, SIZE));
        CHECK(gpuIpcGetMemHandle(&hf, gone));
        CHECK(gpuFree(gone));
        ipc_peer_hex(&hf, hex);
    }
    int fds = open_fds(), st = 0, ready[2];
    pid_t quiet = 0;
    char b;
    if (bad) {
        bad_requests((const unsigned char *)&h, (const unsigned char *)&hf);
        EXPECT(fds_back_to(fds, 3));
    } else {
        EXPECT(pipe(ready) == 0);
        quiet = silent((const unsigned char *)&h, ready[1]);
        EXPECT(quiet > 0 && read(ready[0], &b, 1) == 1);
        close(ready[0]);
        close(ready[1]);
    }
    EXPECT(ipc_peer_run("importer", &h, hex, 0) == 0);
    if (quiet)
        EXPECT(waitpid(quiet, &st, 0) == quiet && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    EXPECT(fds_back_to(fds, 3));
    CHECK(gpuMemcpy(&w, p, sizeof w, gpuMemcpyDefault));
    EXPECT(w == WORD + 1);
    CHECK(gpuFree(p));
    printf("ipc: %s, then a block exported and read back\n",
           bad ? "bad requests refused" : "a silent client held no importer");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4)
        return importer(argv[2], argv[3]);
    if (argc == 2 && strcmp(argv[1], "impostor") == 0)
        return impostor_mode();
    EXPECT(argc == 2 && (strcmp(argv[1], "silent") == 0 || strcmp(argv[1], "bad") == 0));
    return exporter(strcmp(argv[1], "bad") == 0);
}
