/* libFuzzer entry for what the cache's IPC exchange takes from its peer (shim/ipc/wire.c): the
 * input is a series of messages, each sent over a SOCK_SEQPACKET pair with any number of
 * descriptors attached (up to the kernel's 253, more than a chunk holds) and received as one
 * side of the exchange receives it: a request, a head, a chunk or an acknowledgement. Whatever
 * arrives, the receive must take at most the descriptors it asked for or refuse the message
 * with none left open, and the importer's checks of a head and a chunk must pass only answers
 * it can act on safely. Every input ends with this process's descriptors as they were.
 * A message: a byte choosing the receive, a byte giving the descriptors (mod 254), two bytes
 * of length (little-endian, mod 2048), then that many bytes of payload (zeros past the end). */
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ipc/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FDS 253 /* SCM_MAX_FD */

static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n;
}

/* Sends len bytes with n copies of fd attached: whether it went. Not ca_ipc_send, which sends
 * at most a chunk's: a hostile peer attaches up to the kernel's bound. */
static int send_with(int s, const void *msg, size_t len, int fd, int n)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {(void *)msg, len};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n > 0) {
        memset(&ctl, 0, sizeof ctl);
        m.msg_control = ctl.buf;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
        for (int i = 0; i < n; i++)
            memcpy(CMSG_DATA(cm) + sizeof(int) * (size_t)i, &fd, sizeof fd);
    }
    return sendmsg(s, &m, MSG_NOSIGNAL) == (ssize_t)len;
}

/* The importer's checks must pass only what it can act on. */
static void check_head(const ca_ipc_head *h, uint64_t size)
{
    if (ca_ipc_head_ok(h, size) &&
        (h->count == 0 || h->count > CA_IPC_MAX_PIECES || h->first_offset >= h->total ||
         size > h->total - h->first_offset))
        __builtin_trap();
}

static void check_chunk(const ca_ipc_chunk *ch, int n, uint64_t room)
{
    uint32_t want = (uint32_t)n;
    if (!ca_ipc_chunk_ok(ch, n, want, room))
        return;
    uint64_t sum = 0;
    for (uint32_t i = 0; i < want; i++) {
        if (ch->size[i] == 0 || ch->size[i] > room - sum)
            __builtin_trap();
        sum += ch->size[i];
    }
}

/* Receives the message sent on s as receive `kind` and checks what came. */
static void receive_as(int s, unsigned kind, const uint8_t *payload)
{
    static const size_t lens[] = {56, sizeof(ca_ipc_head), sizeof(ca_ipc_chunk),
                                  sizeof(ca_ipc_ack)};
    union {
        ca_ipc_head h;
        ca_ipc_chunk ch;
        char bytes[sizeof(ca_ipc_chunk)];
    } msg;
    int fds[CA_IPC_CHUNK];
    size_t len = lens[kind % 4];
    int max = len == sizeof(ca_ipc_chunk) ? CA_IPC_CHUNK : 0;
    int n = ca_ipc_recv(s, &msg, len, fds, max);
    if (n < -1 || n > max)
        __builtin_trap();
    if (n < 0)
        return;
    uint64_t bound;
    memcpy(&bound, payload, sizeof bound); /* the block's size, or the room left */
    if (len == sizeof(ca_ipc_head))
        check_head(&msg.h, bound);
    if (len == sizeof(ca_ipc_chunk))
        check_chunk(&msg.ch, n, bound);
    ca_ipc_close_all(fds, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t payload[2048 + 8];
    int before = open_fds(), s[2];
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, s) != 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    for (size_t at = 0; at + 4 <= size;) {
        unsigned kind = data[at], n = data[at + 1] % (MAX_FDS + 1);
        size_t len = (data[at + 2] | (size_t)data[at + 3] << 8) % 2048;
        at += 4;
        size_t have = size - at < len ? size - at : len;
        memset(payload, 0, sizeof payload);
        memcpy(payload, data + at, have);
        at += have;
        if (send_with(s[0], payload, len, fd, (int)n))
            receive_as(s[1], kind, payload);
    }
    close(s[0]);
    close(s[1]);
    close(fd);
    if (open_fds() != before)
        __builtin_trap();
    return 0;
}
