/* Interprocess export of mapped memory. The driver's legacy export answers INVALID_VALUE for
 * mapped memory (measured on an H100, docs/gpu.md finding 11) and its handle is opaque, so an
 * export of a live block of an expandable range writes the cache's own record into the 64
 * bytes: the exporting process, a number drawn when it started serving, the block and its
 * device. A process that opens the record under the cache connects to the exporter's abstract
 * Unix socket and receives a file descriptor of each driver mapping holding the block
 * (SCM_RIGHTS; cuMemExportToShareableHandle), then imports and maps them whole, back to back
 * (cuMemMap takes no offset into a handle): the same physical memory at device speed, as the
 * legacy import would give it, with the rest of those mappings around it as a legacy import
 * shows the rest of its allocation. A socket, not
 * pidfd_getfd, since that needs ptrace rights that containers and Yama withhold (PyTorch issue
 * 165685). The exporter answers from one thread of its own, started at its first such export,
 * and only to processes of its own user (SO_PEERCRED). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "ipc_mapped.h"
#include "process.h"

/* The most mappings one block may span to be exported; a growth is one mapping, so a block
 * spans a few at most. Below SCM_MAX_FD (253). */
#define MAX_PIECES 64

static const char magic[16] = "cachealloc-ipc1";

/* The record in the handle's 64 bytes. */
typedef struct record {
    char magic[16];
    int32_t pid;
    int32_t slot;     /* CA_RT_CUDA or CA_RT_HIP: whose arena holds the block */
    uint64_t nonce;   /* the exporter's server: a pid reused by another process never matches */
    uint64_t block;
    uint64_t size;
    uint64_t unused;
} record;
_Static_assert(sizeof(record) <= CA_IPC_HANDLE_SIZE, "the record fits a handle");

typedef struct request {
    record r;
} request;

typedef struct reply {
    uint32_t status; /* the exporter runtime's code */
    uint32_t count;  /* pieces, and descriptors with them */
    uint64_t first_offset; /* the block's start from the first mapping's */
    uint64_t size[MAX_PIECES]; /* each mapping's, whole: the driver maps a handle whole */
} reply;

/* The exporter's server; another one after a fork, since its pid differs. */
static struct {
    pthread_mutex_t lock;
    pid_t pid;
    uint64_t nonce;
} server = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The socket's abstract name (a leading NUL: nothing on disk to clean up), and its length. */
static socklen_t socket_name(struct sockaddr_un *sa, pid_t pid, uint64_t nonce)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    int n = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1, "cachealloc-ipc.%u.%d.%016llx",
                     (unsigned)geteuid(), (int)pid, (unsigned long long)nonce);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* The descriptors of the mappings holding the live block the record names, and the reply that
 * describes them. The number of descriptors in fds, with reply's status set either way. */
static int export_fds(const record *r, reply *out, int *fds)
{
    ca_runtime *rt = r->slot == CA_RT_CUDA || r->slot == CA_RT_HIP ? ca_runtime_by_slot(r->slot)
                                                                   : NULL;
    *out = (reply){.status = 1};
    if (!rt)
        return 0;
    out->status = rt->codes.invalid_value;
    ca_place at;
    ca_piece pc[MAX_PIECES];
    if (!ca_locate(rt->arena, (void *)(uintptr_t)r->block, &at) || at.block != r->block)
        return 0;
    int n = ca_mapped_pieces(rt->arena, r->block, r->size, pc, MAX_PIECES);
    if (n <= 0)
        return 0;
    for (int i = 0; i < n; i++) {
        fds[i] = ca_backend_export_fd(rt, at.dev, (void *)pc[i].addr);
        if (fds[i] < 0) {
            while (i-- > 0)
                close(fds[i]);
            return 0;
        }
        out->size[i] = pc[i].size;
    }
    out->status = rt->codes.success;
    out->count = (uint32_t)n;
    out->first_offset = r->block - pc[0].addr;
    return n;
}

/* Sends the reply, with the descriptors attached. */
static void send_reply(int c, const reply *rp, const int *fds, int n)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * MAX_PIECES)];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {(void *)rp, sizeof *rp};
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
    ssize_t sent = sendmsg(c, &m, MSG_NOSIGNAL);
    (void)sent; /* an importer that went away has nothing to be told */
}

/* One importer's question, answered. Only the exporter's own user may ask: the same rule as
 * the driver's legacy IPC, which needs the exporting process's device files. */
static void answer(int c)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || cr.uid != geteuid())
        return;
    struct timeval tv = {2, 0}; /* an importer that never asks does not hold the server */
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    request q;
    if (recv(c, &q, sizeof q, 0) != (ssize_t)sizeof q || memcmp(q.r.magic, magic, sizeof magic) ||
        q.r.pid != (int32_t)getpid() || q.r.nonce != server.nonce)
        return;
    reply rp;
    int fds[MAX_PIECES];
    int n = export_fds(&q.r, &rp, fds);
    send_reply(c, &rp, fds, n);
    for (int i = 0; i < n; i++)
        close(fds[i]);
}

static void *serve(void *arg)
{
    int l = (int)(intptr_t)arg;
    for (;;) {
        int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EBADF || errno == EINVAL || errno == ENOTSOCK)
                return NULL;
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
                nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
            continue;
        }
        answer(c);
        close(c);
    }
}

/* Starts this process's server unless it runs: 0, or -1 when it cannot. */
static int start_server(void)
{
    pthread_mutex_lock(&server.lock);
    int rc = 0;
    if (server.pid != getpid()) {
        uint64_t nonce = 0;
        if (getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != (ssize_t)sizeof nonce)
            nonce = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
        struct sockaddr_un sa;
        socklen_t n = socket_name(&sa, getpid(), nonce);
        int l = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        rc = -1;
        server.nonce = nonce; /* before the thread that compares requests with it starts */
        if (l >= 0 && bind(l, (struct sockaddr *)&sa, n) == 0 && listen(l, 64) == 0) {
            /* The thread takes none of the program's signals. */
            sigset_t all, old;
            sigfillset(&all);
            pthread_sigmask(SIG_SETMASK, &all, &old);
            pthread_t t;
            pthread_attr_t attr;
            pthread_attr_init(&attr);
            pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
            rc = pthread_create(&t, &attr, serve, (void *)(intptr_t)l) == 0 ? 0 : -1;
            pthread_attr_destroy(&attr);
            pthread_sigmask(SIG_SETMASK, &old, NULL);
        }
        if (rc == 0)
            server.pid = getpid();
        else if (l >= 0)
            close(l);
    }
    pthread_mutex_unlock(&server.lock);
    return rc;
}

ca_rt_err ca_ipc_mapped_export(ca_runtime *rt, const ca_place *at, void *handle)
{
    if (start_server() != 0)
        return rt->codes.invalid_value;
    record r = {.pid = getpid(), .slot = rt->slot, .nonce = server.nonce, .block = at->block,
                .size = at->size};
    memcpy(r.magic, magic, sizeof magic);
    /* Export once now, so that a device that cannot is refused here, as the driver would. */
    reply rp;
    int fds[MAX_PIECES];
    int n = export_fds(&r, &rp, fds);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    if (rp.status != rt->codes.success)
        return rp.status;
    memset(handle, 0, CA_IPC_HANDLE_SIZE);
    memcpy(handle, &r, sizeof r);
    return rt->codes.success;
}

bool ca_ipc_mapped_is_record(const void *handle)
{
    return memcmp(handle, magic, sizeof magic) == 0;
}

bool ca_ipc_mapped_is_own(const void *handle)
{
    record r;
    memcpy(&r, handle, sizeof r);
    return r.pid == (int32_t)getpid();
}

/* Asks the exporter for the block's descriptors: the number received (0 with rp->status set
 * when it refused), -1 when it could not be reached. */
static int fetch(const record *r, reply *rp, int *fds)
{
    struct sockaddr_un sa;
    socklen_t n = socket_name(&sa, r->pid, r->nonce);
    int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (c < 0)
        return -1;
    struct timeval tv = {10, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    request q = {*r};
    int got = -1;
    if (connect(c, (struct sockaddr *)&sa, n) == 0 &&
        send(c, &q, sizeof q, MSG_NOSIGNAL) == (ssize_t)sizeof q) {
        union {
            char buf[CMSG_SPACE(sizeof(int) * MAX_PIECES)];
            struct cmsghdr align;
        } ctl;
        struct iovec iov = {rp, sizeof *rp};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                           .msg_controllen = sizeof ctl.buf};
        ssize_t len = recvmsg(c, &m, MSG_CMSG_CLOEXEC);
        int nfds = 0;
        for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); len > 0 && cm; cm = CMSG_NXTHDR(&m, cm))
            if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                nfds = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                memcpy(fds, CMSG_DATA(cm), sizeof(int) * (size_t)nfds);
            }
        if (len == (ssize_t)sizeof *rp && rp->count <= MAX_PIECES && (int)rp->count == nfds) {
            got = nfds;
        } else {
            for (int i = 0; i < nfds; i++)
                close(fds[i]);
        }
    }
    close(c);
    return got;
}

/* What one open mapped, kept for its close. */
typedef struct opened {
    uintptr_t ptr, base;
    size_t size;
    struct opened *next;
} opened;

static pthread_mutex_t opened_lock = PTHREAD_MUTEX_INITIALIZER;
static opened *opened_list;

/* Maps the received descriptors back to back at a fresh reservation, with read-write access
 * for the current device. Closes every descriptor. */
static ca_rt_err map_pieces(ca_runtime *rt, const reply *rp, const int *fds, uintptr_t *base,
                            size_t *total)
{
    const ca_rt_fns *f = &rt->fn;
    ca_rt_err ok = rt->codes.success, e = ok;
    size_t size = 0, mapped = 0;
    for (uint32_t i = 0; i < rp->count; i++)
        size += rp->size[i];
    void *b = NULL;
    int ordinal = -1;
    if (!f->mem_import_handle || !f->mem_address_reserve || !f->mem_map || !f->mem_release ||
        !f->mem_set_access || !f->mem_unmap || !f->mem_address_free || !f->device_ordinal)
        e = rt->codes.invalid_value;
    if (e == ok)
        e = f->device_ordinal(&ordinal);
    if (e == ok)
        e = f->mem_address_reserve(&b, size, 0, NULL, 0);
    for (uint32_t i = 0; i < rp->count; i++) {
        void *h = NULL;
        if (e == ok)
            e = f->mem_import_handle(&h, (void *)(intptr_t)fds[i], CA_RT_HANDLE_POSIX_FD);
        close(fds[i]);
        if (e != ok)
            continue;
        e = f->mem_map((char *)b + mapped, rp->size[i], 0, h, 0);
        ca_rt_err r = f->mem_release(h); /* the mapping holds the memory from here on */
        (void)r;
        if (e == ok)
            mapped += rp->size[i];
    }
    if (e == ok) {
        ca_rt_access_desc a = {.location = {CA_RT_LOCATION_DEVICE, ordinal},
                               .flags = CA_RT_ACCESS_READWRITE};
        e = f->mem_set_access(b, size, &a, 1);
    }
    if (e != ok && b) {
        if (mapped)
            (void)f->mem_unmap(b, mapped);
        (void)f->mem_address_free(b, size);
    }
    *base = (uintptr_t)b;
    *total = size;
    return e;
}

ca_rt_err ca_ipc_mapped_open(ca_runtime *rt, const void *handle, void **out)
{
    record r;
    memcpy(&r, handle, sizeof r);
    reply rp;
    int fds[MAX_PIECES];
    int n = fetch(&r, &rp, fds);
    if (n < 0) /* the exporter is gone, as the driver finds an export whose process ended */
        return rt->codes.invalid_value;
    if (rp.status != rt->codes.success || n == 0) {
        for (int i = 0; i < n; i++)
            close(fds[i]);
        return rp.status != rt->codes.success ? rp.status : rt->codes.invalid_value;
    }
    uintptr_t base;
    size_t size;
    ca_rt_err e = map_pieces(rt, &rp, fds, &base, &size);
    if (e != rt->codes.success)
        return e;
    opened *o = malloc(sizeof *o);
    if (!o) {
        (void)rt->fn.mem_unmap((void *)base, size);
        (void)rt->fn.mem_address_free((void *)base, size);
        return rt->codes.out_of_memory;
    }
    *o = (opened){base + rp.first_offset, base, size, NULL};
    pthread_mutex_lock(&opened_lock);
    o->next = opened_list;
    opened_list = o;
    pthread_mutex_unlock(&opened_lock);
    *out = (void *)o->ptr;
    return e;
}

bool ca_ipc_mapped_close(ca_runtime *rt, void *p, ca_rt_err *e)
{
    pthread_mutex_lock(&opened_lock);
    opened **at = &opened_list;
    while (*at && (*at)->ptr != (uintptr_t)p)
        at = &(*at)->next;
    opened *o = *at;
    if (o)
        *at = o->next;
    pthread_mutex_unlock(&opened_lock);
    if (!o)
        return false;
    /* A copy from pageable memory returns once staged, before it lands: unmapping then loses
     * it (seen on an H100: the exporter missed the importer's last write). The driver's close
     * waits for the context's work, as cuMemFree does. */
    *e = rt->fn.device_synchronize ? rt->fn.device_synchronize() : rt->codes.success;
    if (*e != rt->codes.success) {
        pthread_mutex_lock(&opened_lock);
        o->next = opened_list;
        opened_list = o;
        pthread_mutex_unlock(&opened_lock);
        return true;
    }
    *e = rt->fn.mem_unmap((void *)o->base, o->size);
    ca_rt_err f = rt->fn.mem_address_free((void *)o->base, o->size);
    if (*e == rt->codes.success)
        *e = f;
    free(o);
    return true;
}
