/* ipc_pieces.c: a block of an expandable segment lying over many driver mappings, exported to
 * another process under the cache. The export hands over a descriptor per mapping, more than
 * one message carries (shim/ipc/wire.h): the importer must see every mapping at its offset,
 * and the exporter what the importer wrote back. The block is built with one growth per PIECE:
 * IPC_PIECES blocks (300 unless set) allocated one after another, each growing the range by a
 * mapping of its own, then freed (they merge) and allocated again as one block.
 * Mode "vanish" first has importers leave the exchange at each step of it, and one stop
 * answering: the exporter must still serve the real importer after them (once its timeout
 * ends the stalled one), and hold no more descriptors than before.
 * With IPC_IMPORT_FDS=N the importer first opens the block allowed only N descriptors more than
 * it holds: the simulator keeps one per imported mapping, so the open fails midway, and must
 * leave nothing mapped and no descriptor open (the simulator's counters tell). */
#include <signal.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "ipc_procs.h"
#include "ipc/wire.h"
#include "open_fds.h"

#define PIECE IPC_PIECE
#define WRITTEN_BACK 1000000u /* what the importer adds to each piece's tag */

static int pieces(void)
{
    const char *s = getenv("IPC_PIECES");
    int n = s ? atoi(s) : 300;
    EXPECT(n > 0 && n <= CA_IPC_MAX_PIECES);
    return n;
}

/* Writes tag's words at the start of piece k of the block at base. */
static void put_tag(void *base, int k, uint32_t tag)
{
    put_words(base, (size_t)k * PIECE, tag);
}

/* Whether piece k of the block at base starts with tag's words. */
static int has_tag(const void *base, int k, uint32_t tag)
{
    return has_words(base, (size_t)k * PIECE, tag);
}

/* Mappings imported on device 0 so far, where the simulator counts them (-1 on a GPU). */
static long long imports_so_far(void)
{
    void *sym = simdev_sym("simdev_get_counters");
    struct simdev_counters c = {0};
    simdev_get_counters_fn f;
    if (!sym)
        return -1;
    memcpy(&f, &sym, sizeof f);
    f(0, &c);
    return (long long)c.vmm_imports;
}

/* The open that runs out of descriptors midway (IPC_IMPORT_FDS). */
static void open_short_of_fds(gpuIpcMemHandle_t h, int more)
{
    struct rlimit r, low;
    void *base = NULL;
    int fds = open_fds();
    EXPECT(getrlimit(RLIMIT_NOFILE, &r) == 0);
    low = (struct rlimit){(rlim_t)(fds + more), r.rlim_max};
    struct simdev_counters before = sim_counters(0);
    EXPECT(setrlimit(RLIMIT_NOFILE, &low) == 0);
    gpuError_t e = gpuIpcOpenMemHandle(&base, h);
    EXPECT(setrlimit(RLIMIT_NOFILE, &r) == 0);
    struct simdev_counters after = sim_counters(0);
    EXPECT(e != gpuSuccess);
    (void)gpuGetLastError();
    EXPECT(after.maps > before.maps); /* midway, not at once */
    EXPECT(after.maps - before.maps == after.unmaps - before.unmaps);
    EXPECT(open_fds() == fds);
}

static int importer(const char *hex)
{
    gpuIpcMemHandle_t h;
    void *base = NULL;
    int n = pieces();
    EXPECT(ipc_peer_unhex(hex, &h) == 0);
    if (getenv("IPC_IMPORT_FDS"))
        open_short_of_fds(h, atoi(getenv("IPC_IMPORT_FDS")));
    long long before = imports_so_far();
    CHECK(gpuIpcOpenMemHandle(&base, h));
    EXPECT(before < 0 || imports_so_far() - before == n); /* one import per mapping */
    for (int k = 0; k < n; k++) {
        if (!has_tag(base, k, (uint32_t)k + 1)) {
            fprintf(stderr, "importer: piece %d of %d is not the exporter's\n", k, n);
            return 3;
        }
        put_tag(base, k, (uint32_t)k + 1 + WRITTEN_BACK);
    }
    CHECK(gpuIpcCloseMemHandle(base));
    return 0;
}

/* An importer that speaks the exchange by hand and leaves it after `step` messages: 1, the
 * request sent; 2, the head read; 3, the first chunk read (its descriptors dropped) and not
 * acknowledged; 4, acknowledged. Step 0 stops after the first chunk, writes a byte to `ready`
 * and waits to be killed. The request is the record, the first 56 bytes of the handle; its
 * pid (byte 16), its nonce (byte 24) and the socket's name are shim/ipc/mapped.c's. */
static pid_t rogue(const gpuIpcMemHandle_t *h, int step, int ready)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    unsigned char rec[IPC_PEER_HANDLE];
    int32_t epid;
    uint64_t nonce;
    memcpy(rec, h, sizeof rec);
    memcpy(&epid, rec + 16, sizeof epid);
    memcpy(&nonce, rec + 24, sizeof nonce);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    int len = snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "cachealloc-ipc.%u.%d.%016llx",
                       (unsigned)geteuid(), (int)epid, (unsigned long long)nonce);
    int c = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    socklen_t salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
    if (c < 0 || connect(c, (struct sockaddr *)&sa, salen) != 0 || send(c, rec, 56, 0) != 56)
        _exit(2);
    if (step == 1)
        _exit(0);
    ca_ipc_head head;
    ca_ipc_chunk ch;
    if (recv(c, &head, sizeof head, 0) != (ssize_t)sizeof head || head.status != 0 ||
        head.count <= CA_IPC_CHUNK)
        _exit(3);
    if (step == 2)
        _exit(0);
    if (recv(c, &ch, sizeof ch, 0) != (ssize_t)sizeof ch || ch.n != CA_IPC_CHUNK)
        _exit(4);
    if (step == 0) {
        if (write(ready, "", 1) != 1)
            _exit(5);
        for (;;)
            pause();
    }
    ca_ipc_ack ack = ch.n;
    if (step == 4 && send(c, &ack, sizeof ack, 0) != (ssize_t)sizeof ack)
        _exit(5);
    _exit(0);
}

/* Runs the importers that leave midway; answers the one that stalls, still connected. */
static pid_t leave_midway(const gpuIpcMemHandle_t *h)
{
    for (int step = 1; step <= 4; step++) {
        int st = 0;
        pid_t pid = rogue(h, step, -1);
        EXPECT(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    int ready[2];
    char b;
    EXPECT(pipe(ready) == 0);
    pid_t stalled = rogue(h, 0, ready[1]);
    EXPECT(stalled > 0 && read(ready[0], &b, 1) == 1);
    close(ready[0]);
    close(ready[1]);
    return stalled;
}

static int exporter(int vanish)
{
    int n = pieces();
    void *big = ipc_block_over(n);
    for (int k = 0; k < n; k++)
        put_tag(big, k, (uint32_t)k + 1);
    gpuIpcMemHandle_t h;
    CHECK(gpuIpcGetMemHandle(&h, big));
    int fds = open_fds();
    pid_t stalled = vanish ? leave_midway(&h) : 0;
    EXPECT(ipc_peer_run("importer", &h, "", 0) == 0);
    if (vanish) {
        kill(stalled, SIGKILL);
        EXPECT(waitpid(stalled, NULL, 0) == stalled);
        EXPECT(fds_back_to(fds, 2));
    }
    for (int k = 0; k < n; k++)
        EXPECT(has_tag(big, k, (uint32_t)k + 1 + WRITTEN_BACK));
    CHECK(gpuFree(big));
    printf("ipc: a block over %d mappings exported and read back%s\n", n,
           vanish ? " after importers that left midway" : "");
    return 0;
}

int main(int argc, char **argv)
{
    raise_fd_limit();
    if (argc == 4)
        return importer(argv[2]);
    return exporter(argc > 1 && strcmp(argv[1], "vanish") == 0);
}
