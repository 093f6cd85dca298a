/* Messages with descriptors attached (SCM_RIGHTS), with the checks both sides of the exchange
 * need: a message of another size, or one whose descriptors did not all arrive, is refused
 * whole, and whatever descriptors did arrive are closed, never leaked; and what the importer
 * checks in the exporter's answers before it acts on them. tests/fuzz/fuzz_ipc_wire.c feeds
 * them arbitrary messages. */
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/ca_assert.h"
#include "ipc/wire.h"

typedef union control {
    char buf[CMSG_SPACE(sizeof(int) * CA_IPC_CHUNK)];
    struct cmsghdr align;
} control;

bool ca_ipc_head_ok(const ca_ipc_head *h, uint64_t size)
{
    return h->count > 0 && h->count <= CA_IPC_MAX_PIECES && h->total > 0 &&
           (size_t)h->total == h->total && h->first_offset < h->total &&
           size <= h->total - h->first_offset;
}

bool ca_ipc_chunk_ok(const ca_ipc_chunk *ch, int fds, uint32_t want, uint64_t room)
{
    if (want > CA_IPC_CHUNK || ch->n != want || fds != (int)want)
        return false;
    for (uint32_t i = 0; i < want; i++) {
        /* Sizes from another process: each whole mapping must fit what is left. */
        if (ch->size[i] == 0 || ch->size[i] > room)
            return false;
        room -= ch->size[i];
    }
    return true;
}

int ca_ipc_send(int sock, const void *msg, size_t len, const int *fds, int n)
{
    ca_assert(n >= 0 && n <= CA_IPC_CHUNK);
    control ctl;
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
        memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)n);
    }
    /* MSG_NOSIGNAL: a peer that went away is an error here, never SIGPIPE. */
    return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

int ca_ipc_recv(int sock, void *msg, size_t len, int *fds, int max)
{
    ca_assert(max >= 0 && max <= CA_IPC_CHUNK);
    control ctl;
    struct iovec iov = {msg, len};
    /* Room for a full chunk whatever max is, so that descriptors beyond it arrive and are
     * closed rather than truncated away unseen. */
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                       .msg_controllen = sizeof ctl.buf};
    ssize_t got = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    int n = 0;
    bool extra = false;
    for (struct cmsghdr *cm = got >= 0 ? CMSG_FIRSTHDR(&m) : NULL; cm; cm = CMSG_NXTHDR(&m, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(cm) + i * sizeof fd, sizeof fd);
            if (n < max) {
                fds[n++] = fd;
            } else {
                close(fd);
                extra = true;
            }
        }
    }
    if (got != (ssize_t)len || extra || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
        ca_ipc_close_all(fds, n);
        return -1;
    }
    return n;
}

void ca_ipc_close_all(const int *fds, int n)
{
    for (int i = 0; i < n; i++)
        close(fds[i]);
}
