/* Interprocess export of mapped memory. The driver's legacy export answers INVALID_VALUE for
 * mapped memory (measured on an H100, docs/gpu.md finding 11) and its handle is opaque, so an
 * export of a live block of an expandable range writes the cache's own record into the 64
 * bytes: the exporting process, a number drawn when it started serving, the block and its
 * device. A process that opens the record under the cache connects to the exporter's abstract
 * Unix socket and receives a file descriptor of each driver mapping holding the block
 * (SCM_RIGHTS; cuMemExportToShareableHandle), in chunks of a bounded size however many there
 * are (ipc/wire.h), then imports and maps them whole, back to back (cuMemMap takes no offset
 * into a handle): the same physical memory at device speed, as the
 * legacy import would give it, with the rest of those mappings around it as a legacy import
 * shows the rest of its allocation. A socket, not
 * pidfd_getfd, since that needs ptrace rights that containers and Yama withhold (PyTorch issue
 * 165685). The exporter answers each importer on a thread of its own, a few at once
 * (ipc/serve.c), started at its first such export, and only to processes of its own user; the
 * importer takes its answer only from the process the record names (both by SO_PEERCRED). */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "ipc/mapped.h"
#include "ipc/serve.h"
#include "ipc/wire.h"
#include "process.h"

/* "ipc2": descriptors in acknowledged chunks (ipc/wire.h). A peer of another version reads
 * this as no record of its own and passes it to the driver, which refuses it. */
static const char magic[16] = "cachealloc-ipc2";

/* The record in the handle's 64 bytes. */
typedef struct record {
    char magic[16];
    int32_t pid;
    int32_t index;    /* CA_RT_CUDA or CA_RT_HIP: whose arena holds the block */
    uint64_t nonce;   /* the exporter's server: a pid reused by another process never matches */
    uint64_t block;
    uint64_t size;
    uint64_t unused;
} record;
_Static_assert(sizeof(record) <= CA_IPC_HANDLE_SIZE, "the record fits a handle");

typedef struct request {
    record r;
} request;
_Static_assert(offsetof(record, pid) == 16 && offsetof(record, nonce) == 24 &&
                   sizeof(request) == 56,
               "tests/integration/ipc_pieces.c speaks the exchange by hand with this layout");

/* What every runtime answers for an invalid value (CUDA's, its driver's and HIP's codes are
 * all 1): the answer to a request that names no runtime, or is no request at all. */
#define INVALID_VALUE 1

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

/* The mappings holding an exported block, and whose driver exports them. */
typedef struct listing {
    ca_runtime *rt;
    int dev;
    int count;
    ca_piece *pc; /* count of them, in address order; the caller frees it */
} listing;

/* Lists the mappings holding the live block the record names: codes.success with *l filled,
 * or the code to refuse with (l->pc NULL then). */
static ca_rt_err list_pieces(const record *r, listing *l)
{
    ca_runtime *rt = r->index == CA_RT_CUDA || r->index == CA_RT_HIP ? ca_runtime_by_index(r->index)
                                                                   : NULL;
    *l = (listing){rt, 0, 0, NULL};
    if (!rt)
        return INVALID_VALUE;
    ca_place at;
    if (!ca_locate(rt->arena, (void *)(uintptr_t)r->block, &at) || at.block != r->block)
        return rt->codes.invalid_value;
    l->dev = at.dev;
    /* Most blocks lie over a few mappings: room grows only for those over many. */
    for (int cap = 64;; cap = cap * 4 < CA_IPC_MAX_PIECES ? cap * 4 : CA_IPC_MAX_PIECES) {
        ca_piece *pc = realloc(l->pc, sizeof *pc * (size_t)cap);
        if (!pc) {
            free(l->pc);
            l->pc = NULL;
            return rt->codes.out_of_memory;
        }
        l->pc = pc;
        int n = ca_mapped_pieces(rt->arena, r->block, r->size, pc, cap);
        if (n > 0) {
            l->count = n;
            return rt->codes.success;
        }
        if (n == 0 || cap == CA_IPC_MAX_PIECES) { /* freed since, or more than we send */
            free(l->pc);
            l->pc = NULL;
            return rt->codes.invalid_value;
        }
    }
}

/* Chunks in flight at once, all importers together: Linux counts descriptors in flight against
 * the sender's descriptor limit (often 1024), so concurrent importers must not multiply them. */
#define IN_FLIGHT 4

/* The chunks in flight, and the lock under which a chunk's descriptors are made, sent and
 * closed: the exporter holds at most one chunk's at any time, however many importers ask. */
static struct {
    pthread_mutex_t lock, exporting;
    pthread_cond_t back;
    int taken;
} flight = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void take_flight(void)
{
    pthread_mutex_lock(&flight.lock);
    while (flight.taken >= IN_FLIGHT)
        pthread_cond_wait(&flight.back, &flight.lock);
    flight.taken++;
    pthread_mutex_unlock(&flight.lock);
}

static void give_flight(void)
{
    pthread_mutex_lock(&flight.lock);
    flight.taken--;
    pthread_cond_signal(&flight.back);
    pthread_mutex_unlock(&flight.lock);
}

/* Makes and sends chunk i's descriptors: 0, or -1 when the exchange ends. */
static int send_chunk(int c, const listing *l, int i)
{
    int n = l->count - i < CA_IPC_CHUNK ? l->count - i : CA_IPC_CHUNK;
    int fds[CA_IPC_CHUNK];
    ca_ipc_chunk ch = {.status = l->rt->codes.success, .n = (uint32_t)n};
    pthread_mutex_lock(&flight.exporting);
    for (int k = 0; k < n; k++) {
        fds[k] = ca_backend_export_fd(l->rt, l->dev, (void *)l->pc[i + k].addr);
        if (fds[k] < 0) { /* unmapped since the listing: the block was freed */
            ca_ipc_close_all(fds, k);
            pthread_mutex_unlock(&flight.exporting);
            ch = (ca_ipc_chunk){.status = l->rt->codes.invalid_value};
            (void)ca_ipc_send(c, &ch, sizeof ch, NULL, 0);
            return -1;
        }
        ch.size[k] = l->pc[i + k].size;
    }
    /* Never blocks long: the importer has at most the head and one chunk queued. */
    int sent = ca_ipc_send(c, &ch, sizeof ch, fds, n);
    ca_ipc_close_all(fds, n);
    pthread_mutex_unlock(&flight.exporting);
    return sent;
}

/* Sends the listed mappings in chunks. A chunk's descriptors are made just before it goes and
 * closed once it went, and the next chunk waits for the importer's acknowledgement, so each
 * importer has at most a chunk's in flight, and all of them IN_FLIGHT chunks' (what a chunk
 * holds is given back at its acknowledgement, or when the exchange ends). An importer that
 * went away or stopped answering (the socket's timeouts) ends the exchange; what it did not
 * receive the kernel closes with the socket. */
static void send_pieces(int c, const listing *l)
{
    for (int i = 0; i < l->count; i += CA_IPC_CHUNK) {
        ca_ipc_ack ack = 0;
        if (i > 0) {
            int got = ca_ipc_recv(c, &ack, sizeof ack, NULL, 0);
            give_flight();
            if (got != 0 || ack != (uint32_t)i)
                return;
        }
        take_flight();
        if (send_chunk(c, l, i) != 0)
            break;
    }
    give_flight();
}

/* One importer's question, answered. Only the exporter's own user may ask: the same rule as
 * the driver's legacy IPC, which needs the exporting process's device files. Anything but a
 * request for this server (another size, descriptors attached, another server's record) is
 * answered INVALID_VALUE, as the importer under the cache would report it. */
static void answer(int c)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || cr.uid != geteuid())
        return;
    /* An importer that stops asking or reading does not hold the server. */
    struct timeval tv = {2, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    request q;
    if (ca_ipc_recv(c, &q, sizeof q, NULL, 0) != 0 || memcmp(q.r.magic, magic, sizeof magic) ||
        q.r.pid != (int32_t)getpid() || q.r.nonce != server.nonce) {
        ca_ipc_head no = {.status = INVALID_VALUE};
        (void)ca_ipc_send(c, &no, sizeof no, NULL, 0);
        return;
    }
    listing l;
    ca_ipc_head h = {.status = list_pieces(&q.r, &l)};
    bool ok = l.rt && h.status == l.rt->codes.success;
    if (ok) {
        h.count = (uint32_t)l.count;
        h.first_offset = q.r.block - l.pc[0].addr;
        for (int i = 0; i < l.count; i++)
            h.total += l.pc[i].size;
    }
    if (ca_ipc_send(c, &h, sizeof h, NULL, 0) == 0 && ok)
        send_pieces(c, &l);
    free(l.pc);
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
        /* A child of fork: the parent's chunks in flight, and its locks, are not this
         * process's. No thread here uses them yet, since this process serves nothing yet. */
        pthread_mutex_init(&flight.lock, NULL);
        pthread_mutex_init(&flight.exporting, NULL);
        pthread_cond_init(&flight.back, NULL);
        flight.taken = 0;
        if (l >= 0 && bind(l, (struct sockaddr *)&sa, n) == 0 && listen(l, 64) == 0)
            rc = ca_ipc_serve(l, answer);
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
    record r = {.pid = getpid(), .index = rt->index, .nonce = server.nonce, .block = at->block,
                .size = at->size};
    memcpy(r.magic, magic, sizeof magic);
    /* Export now, so that a device that cannot is refused here, as the driver would. One
     * mapping tells for all: the cache creates every mapping of a device alike. */
    listing l;
    ca_rt_err e = list_pieces(&r, &l);
    if (e == rt->codes.success) {
        int fd = ca_backend_export_fd(rt, l.dev, (void *)l.pc[0].addr);
        if (fd < 0)
            e = rt->codes.invalid_value;
        else
            close(fd);
    }
    free(l.pc);
    if (e != rt->codes.success)
        return e;
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

/* What one open mapped, kept for its close. */
typedef struct opened {
    uintptr_t ptr, base;
    size_t size;
    struct opened *next;
} opened;

static pthread_mutex_t opened_lock = PTHREAD_MUTEX_INITIALIZER;
static opened *opened_list;

/* An import under way: the reservation, and how much of it is mapped from its start. */
typedef struct import {
    ca_runtime *rt;
    char *base;
    size_t total, mapped;
} import;

/* Maps a chunk's mappings whole, after what is mapped, in order. Closes every descriptor. */
static ca_rt_err map_chunk(import *im, const ca_ipc_chunk *ch, const int *fds)
{
    const ca_rt_fns *f = &im->rt->fn;
    ca_rt_err ok = im->rt->codes.success, e = ok;
    for (uint32_t i = 0; i < ch->n; i++) { /* sizes checked: ca_ipc_chunk_ok */
        void *h = NULL;
        if (e == ok)
            e = f->mem_import_handle(&h, (void *)(intptr_t)fds[i], CA_RT_HANDLE_POSIX_FD);
        close(fds[i]);
        if (e != ok)
            continue;
        e = f->mem_map(im->base + im->mapped, ch->size[i], 0, h, 0);
        ca_rt_err r = f->mem_release(h); /* the mapping holds the memory from here on */
        (void)r;
        if (e == ok)
            im->mapped += ch->size[i];
    }
    return e;
}

/* Receives the chunks the head announced and maps them back to back at im's reservation,
 * acknowledging each but the last as soon as it arrived. */
static ca_rt_err receive_pieces(int c, const ca_ipc_head *h, import *im)
{
    ca_rt_err ok = im->rt->codes.success;
    for (uint32_t got = 0; got < h->count;) {
        ca_ipc_chunk ch;
        int fds[CA_IPC_CHUNK];
        uint32_t want = h->count - got < CA_IPC_CHUNK ? h->count - got : CA_IPC_CHUNK;
        int n = ca_ipc_recv(c, &ch, sizeof ch, fds, CA_IPC_CHUNK);
        if (n < 0)
            return im->rt->codes.invalid_value;
        if (ch.status != ok || !ca_ipc_chunk_ok(&ch, n, want, im->total - im->mapped)) {
            ca_ipc_close_all(fds, n);
            return ch.status != ok ? ch.status : im->rt->codes.invalid_value;
        }
        got += want;
        ca_ipc_ack ack = got;
        if (got < h->count && ca_ipc_send(c, &ack, sizeof ack, NULL, 0) != 0) {
            ca_ipc_close_all(fds, n);
            return im->rt->codes.invalid_value;
        }
        ca_rt_err e = map_chunk(im, &ch, fds);
        if (e != ok)
            return e;
    }
    return im->mapped == im->total ? ok : im->rt->codes.invalid_value;
}

/* Asks the exporter for the block the record names and maps its mappings at a fresh
 * reservation, with read-write access for the current device: codes.success with *im filled
 * and the block's offset in it in *first, or the code of what failed, nothing left mapped. */
static ca_rt_err receive(int c, const record *r, import *im, uint64_t *first)
{
    ca_runtime *rt = im->rt;
    const ca_rt_fns *f = &rt->fn;
    ca_rt_err ok = rt->codes.success, e;
    request q = {*r};
    ca_ipc_head h;
    /* An exporter that is gone or not answering, as the driver finds an export whose process
     * ended. */
    if (ca_ipc_send(c, &q, sizeof q, NULL, 0) != 0 || ca_ipc_recv(c, &h, sizeof h, NULL, 0) != 0)
        return rt->codes.invalid_value;
    if (h.status != ok)
        return h.status;
    if (!ca_ipc_head_ok(&h, r->size))
        return rt->codes.invalid_value;
    if (!f->mem_import_handle || !f->mem_address_reserve || !f->mem_map || !f->mem_release ||
        !f->mem_set_access || !f->mem_unmap || !f->mem_address_free || !f->device_ordinal)
        return rt->codes.invalid_value;
    int ordinal = -1;
    void *b = NULL;
    e = f->device_ordinal(&ordinal);
    if (e == ok)
        e = f->mem_address_reserve(&b, (size_t)h.total, 0, NULL, 0);
    if (e != ok)
        return e;
    im->base = b;
    im->total = (size_t)h.total;
    im->mapped = 0;
    e = receive_pieces(c, &h, im);
    if (e == ok) {
        ca_rt_access_desc a = {.location = {CA_RT_LOCATION_DEVICE, ordinal},
                               .flags = CA_RT_ACCESS_READWRITE};
        e = f->mem_set_access(b, im->total, &a, 1);
    }
    if (e != ok) {
        if (im->mapped)
            (void)f->mem_unmap(b, im->mapped);
        (void)f->mem_address_free(b, im->total);
        return e;
    }
    *first = h.first_offset;
    return ok;
}

/* Whether pid, as this process sees it, lives in this process's PID namespace. */
static bool same_pid_namespace(pid_t pid)
{
    char path[64];
    struct stat mine, theirs;
    snprintf(path, sizeof path, "/proc/%d/ns/pid", (int)pid);
    return stat("/proc/self/ns/pid", &mine) == 0 && stat(path, &theirs) == 0 &&
           mine.st_ino == theirs.st_ino && mine.st_dev == theirs.st_dev;
}

/* Whether the process listening at the other end of c is the record's exporter, of this
 * user. Any process may bind an abstract name, the exporter's too once it is gone: an importer
 * that asked it would map whatever descriptors it sent as the block. The record's pid is the
 * exporter's own view of it: where the two processes share a network namespace but not a PID
 * namespace (containers of one pod), the peer's pid reads otherwise or 0 here, and the user
 * alone decides, as it does for legacy IPC's device files. */
static bool answered_by(int c, const record *r)
{
    struct ucred cr;
    socklen_t len = sizeof cr;
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0 || len != sizeof cr ||
        cr.uid != geteuid())
        return false;
    return cr.pid == (pid_t)r->pid || cr.pid == 0 || !same_pid_namespace(cr.pid);
}

ca_rt_err ca_ipc_mapped_open(ca_runtime *rt, const void *handle, void **out)
{
    record r;
    memcpy(&r, handle, sizeof r);
    struct sockaddr_un sa;
    socklen_t len = socket_name(&sa, r.pid, r.nonce);
    int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (c < 0)
        return rt->codes.invalid_value;
    /* The exporter answers each message at once; longer means it is stuck or gone. */
    struct timeval tv = {10, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    import im = {.rt = rt};
    uint64_t first = 0;
    ca_rt_err e = connect(c, (struct sockaddr *)&sa, len) == 0 && answered_by(c, &r)
                      ? receive(c, &r, &im, &first)
                      : rt->codes.invalid_value;
    close(c);
    if (e != rt->codes.success)
        return e;
    opened *o = malloc(sizeof *o);
    if (!o) {
        (void)rt->fn.mem_unmap(im.base, im.total);
        (void)rt->fn.mem_address_free(im.base, im.total);
        return rt->codes.out_of_memory;
    }
    *o = (opened){(uintptr_t)im.base + first, (uintptr_t)im.base, im.total, NULL};
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
