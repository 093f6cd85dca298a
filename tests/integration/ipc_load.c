/* ipc_load.c: the cache's IPC exchange (shim/ipc/mapped.c) under repetition and load, bytes
 * checked both ways each time:
 *   "rounds"     IPC_ROUNDS (1000 unless set) export, open and close rounds between this
 *                process and one importer, over three blocks in turn (256 KiB and 4 MiB, and
 *                one round in ten a block over 130 mappings: two messages of descriptors).
 *                From the end of the first ten rounds to the last, each side must be back to its descriptors, the
 *                exporter to its threads and its own mappings, and the importer must have
 *                unmapped every mapping it imported; every descriptor the exporter made must
 *                have been imported (the simulator's counters tell).
 *   "importers"  IPC_IMPORTERS (16 unless set) importers, released at once, each open one block
 *                over 200 mappings that all of them share and a block of its own: each reads
 *                the exporter's words everywhere, writes its own into a region of the shared
 *                block and of its own block, and the exporter finds every one of them, and
 *                its descriptors and threads back where they were. */
#include "ipc_procs.h"
#include "open_fds.h"

#define SIZE (4 << 20)
#define SMALL (256 << 10)
#define ROUND_PIECES 130 /* two messages of descriptors (CA_IPC_CHUNK 128) */
#define SHARED_PIECES 200
#define WRITTEN_BACK 1000000u
#define SEED_SHARED 0x5a5a0000u
#define SEED_OWN 0x0e0e0000u
#define SEED_REGION 0x7e7e0000u
#define WARM 10 /* the rounds after which counting starts: each block served by then */

static int env_count(const char *name, int dflt, int max)
{
    const char *s = getenv(name);
    int n = s ? atoi(s) : dflt;
    EXPECT(n > 0 && n <= max);
    return n;
}

/* ---- "rounds" ---- */

/* The importer: for each line "<record> <size> <seed>" on cmd, opens the block, checks the
 * seed's words at its start and end, writes its own after them, closes, and answers "k" on ans;
 * at "end", answers its descriptors and the simulator's counters since round WARM. */
static int rounds_importer(int cmd, int ans)
{
    char line[512], hex[2 * IPC_PEER_HANDLE + 1];
    struct simdev_counters c0 = {0}, c1;
    int fds = -1;
    for (int r = 0;; r++) {
        unsigned long long size;
        unsigned seed;
        gpuIpcMemHandle_t h;
        void *p = NULL;
        if (r == WARM) {
            fds = open_fds();
            c0 = sim_counters(0);
        }
        EXPECT(ipc_read_line(cmd, line, sizeof line) == 0);
        if (strcmp(line, "end") == 0)
            break;
        EXPECT(sscanf(line, "%128s %llu %u", hex, &size, &seed) == 3);
        EXPECT(ipc_peer_unhex(hex, &h) == 0);
        CHECK(gpuIpcOpenMemHandle(&p, h));
        if (!has_words(p, 0, seed) || !has_words(p, size - IPC_WORDS * 4, seed + 1)) {
            fprintf(stderr, "round %d: the block of %llu bytes is not the exporter's\n", r, size);
            return 3;
        }
        put_words(p, IPC_WORDS * 4, seed + WRITTEN_BACK);
        CHECK(gpuIpcCloseMemHandle(p));
        EXPECT(write(ans, "k", 1) == 1);
    }
    c1 = sim_counters(0);
    snprintf(line, sizeof line, "%d %d %llu %llu %llu", fds, open_fds(),
             (unsigned long long)(c1.vmm_imports - c0.vmm_imports),
             (unsigned long long)(c1.maps - c0.maps), (unsigned long long)(c1.unmaps - c0.unmaps));
    ipc_send_line(ans, line);
    return 0;
}

static int rounds(void)
{
    int n = env_count("IPC_ROUNDS", 1000, 1000000);
    EXPECT(n > WARM);
    size_t size[3] = {SMALL, SIZE, (size_t)ROUND_PIECES * IPC_PIECE};
    void *b[3];
    b[2] = ipc_block_over(ROUND_PIECES);
    CHECK(gpuMalloc(&b[1], size[1]));
    CHECK(gpuMalloc(&b[0], size[0]));
    int cmd[2], ans[2];
    char fc[16], fa[16], line[512], hex[2 * IPC_PEER_HANDLE + 1];
    ipc_pipe(cmd);
    ipc_pipe(ans);
    char *args[] = {"ipc-peer", "rounds-importer", IPC_FD_ARG(fc, cmd[0]), IPC_FD_ARG(fa, ans[1]),
                    NULL};
    int keep[] = {cmd[0], ans[1]};
    pid_t imp = ipc_spawn(args, keep, 2);
    EXPECT(imp > 0);
    close(cmd[0]);
    close(ans[1]);
    int fds = -1, threads = -1;
    struct simdev_counters c0 = {0}, c1;
    double t0 = 0;
    for (int r = 0; r < n; r++) {
        int k = r % 10 == WARM - 1 ? 2 : r % 2; /* the big block one round in ten */
        uint32_t seed = (uint32_t)r * 4u + 1u;
        gpuIpcMemHandle_t h;
        char c;
        if (r == WARM) {
            fds = open_fds();
            threads = live_threads();
            c0 = sim_counters(0);
            t0 = ipc_now();
        }
        put_words(b[k], 0, seed);
        put_words(b[k], size[k] - IPC_WORDS * 4, seed + 1);
        CHECK(gpuIpcGetMemHandle(&h, b[k]));
        ipc_peer_hex(&h, hex);
        snprintf(line, sizeof line, "%s %zu %u", hex, size[k], seed);
        ipc_send_line(cmd[1], line);
        EXPECT(read(ans[0], &c, 1) == 1 && c == 'k');
        if (!has_words(b[k], IPC_WORDS * 4, seed + WRITTEN_BACK)) {
            fprintf(stderr, "round %d: the importer's words did not come back\n", r);
            return 1;
        }
    }
    double took = ipc_now() - t0;
    ipc_send_line(cmd[1], "end");
    int ifds0, ifds1;
    unsigned long long imports, maps, unmaps;
    EXPECT(ipc_read_line(ans[0], line, sizeof line) == 0);
    EXPECT(sscanf(line, "%d %d %llu %llu %llu", &ifds0, &ifds1, &imports, &maps, &unmaps) == 5);
    EXPECT(ipc_status(imp) == 0);
    EXPECT(fds_back_to(fds, 3));
    EXPECT(threads_back_to(threads, 3));
    c1 = sim_counters(0);
    unsigned long long exports = c1.vmm_exports - c0.vmm_exports;
    int counted = n - WARM;
    /* Every mapping imported was unmapped; the exporter's own mappings never changed; and
     * each round the exporter made one descriptor at the export (the check that the driver
     * exports the block) and one per mapping it sent, each of which the importer imported. */
    if (ifds0 != ifds1 || maps != imports || unmaps != imports || imports < (unsigned)counted ||
        c1.maps != c0.maps || c1.unmaps != c0.unmaps || exports != imports + (unsigned)counted) {
        fprintf(stderr, "rounds: importer descriptors %d then %d, %llu imports, %llu maps, %llu "
                "unmaps; exporter %llu exports, %llu maps, %llu unmaps\n", ifds0, ifds1, imports,
                maps, unmaps, exports, (unsigned long long)(c1.maps - c0.maps),
                (unsigned long long)(c1.unmaps - c0.unmaps));
        return 1;
    }
    for (int k = 0; k < 3; k++)
        CHECK(gpuFree(b[k]));
    printf("ipc: %d export/open/close rounds (%d counted, %.2f ms each): exporter descriptors %d "
           "before, %d after, threads %d, %d; importer descriptors %d, %d; %llu mappings "
           "imported, mapped and unmapped, %llu exported\n", n, counted,
           took * 1e3 / counted, fds, open_fds(), threads, live_threads(), ifds0, ifds1, imports,
           exports);
    return 0;
}

/* ---- "importers" ---- */

/* Where importer k writes in the shared block: the middle of a piece of its own. */
static size_t region_of(int k, int importers)
{
    return (size_t)(k * SHARED_PIECES / importers) * IPC_PIECE + IPC_PIECE / 2;
}

/* Importer k of n: waits on go, opens both blocks (its parity decides the order), checks the
 * exporter's words, writes its own, closes, and says on out when its opens began and ended. */
static int load_importer(const char *hex_s, const char *hex_o, int k, int n, int go, int out)
{
    gpuIpcMemHandle_t hs, ho;
    void *s = NULL, *o = NULL;
    char c, line[128];
    EXPECT(ipc_peer_unhex(hex_s, &hs) == 0 && ipc_peer_unhex(hex_o, &ho) == 0);
    ipc_warm_up();
    EXPECT(read(go, &c, 1) == 0); /* released with all the others */
    double t0 = ipc_now();
    if (k % 2 == 0) {
        CHECK(gpuIpcOpenMemHandle(&s, hs));
        CHECK(gpuIpcOpenMemHandle(&o, ho));
    } else {
        CHECK(gpuIpcOpenMemHandle(&o, ho));
        CHECK(gpuIpcOpenMemHandle(&s, hs));
    }
    double t1 = ipc_now();
    for (int j = 0; j < SHARED_PIECES; j++)
        if (!has_words(s, (size_t)j * IPC_PIECE, SEED_SHARED + (uint32_t)j)) {
            fprintf(stderr, "importer %d: piece %d of the shared block is not the exporter's\n", k,
                    j);
            return 3;
        }
    if (!has_words(o, 0, SEED_OWN + (uint32_t)k) ||
        !has_words(o, SIZE - IPC_WORDS * 4, SEED_OWN + (uint32_t)k + 1)) {
        fprintf(stderr, "importer %d: its own block is not the exporter's\n", k);
        return 3;
    }
    put_words(s, region_of(k, n), SEED_REGION + (uint32_t)k);
    put_words(o, IPC_WORDS * 4, SEED_OWN + (uint32_t)k + WRITTEN_BACK);
    CHECK(gpuIpcCloseMemHandle(s));
    CHECK(gpuIpcCloseMemHandle(o));
    snprintf(line, sizeof line, "%.6f %.6f", t0, t1);
    ipc_send_line(out, line);
    return 0;
}

/* The most intervals of n that hold at one time. */
static int most_at_once(const double (*t)[2], int n)
{
    int most = 0;
    for (int i = 0; i < n; i++) {
        int at = 0;
        for (int j = 0; j < n; j++)
            at += t[j][0] <= t[i][0] && t[i][0] < t[j][1];
        most = at > most ? at : most;
    }
    return most;
}

static int importers(void)
{
    int n = env_count("IPC_IMPORTERS", 16, 64);
    void *s = ipc_block_over(SHARED_PIECES), **own = calloc((size_t)n, sizeof *own);
    gpuIpcMemHandle_t hs, ho;
    char hex_s[2 * IPC_PEER_HANDLE + 1], hex_o[2 * IPC_PEER_HANDLE + 1], line[128];
    char fk[16], fn[16], fg[16], fo[16];
    pid_t *pid = calloc((size_t)n, sizeof *pid);
    double(*t)[2] = calloc((size_t)n, sizeof *t);
    int go[2], out[2];
    EXPECT(own && pid && t);
    for (int j = 0; j < SHARED_PIECES; j++)
        put_words(s, (size_t)j * IPC_PIECE, SEED_SHARED + (uint32_t)j);
    for (int k = 0; k < n; k++) {
        CHECK(gpuMalloc(&own[k], SIZE));
        put_words(own[k], 0, SEED_OWN + (uint32_t)k);
        put_words(own[k], SIZE - IPC_WORDS * 4, SEED_OWN + (uint32_t)k + 1);
    }
    CHECK(gpuIpcGetMemHandle(&hs, s));
    ipc_peer_hex(&hs, hex_s);
    int fds = open_fds(), threads = live_threads();
    ipc_pipe(go);
    ipc_pipe(out);
    for (int k = 0; k < n; k++) {
        CHECK(gpuIpcGetMemHandle(&ho, own[k]));
        ipc_peer_hex(&ho, hex_o);
        snprintf(fk, sizeof fk, "%d", k);
        snprintf(fn, sizeof fn, "%d", n);
        char *args[] = {"ipc-peer", "load-importer", hex_s, hex_o, fk, fn,
                        IPC_FD_ARG(fg, go[0]), IPC_FD_ARG(fo, out[1]), NULL};
        int keep[] = {go[0], out[1]};
        pid[k] = ipc_spawn(args, keep, 2);
        EXPECT(pid[k] > 0);
    }
    close(go[0]);
    close(out[1]);
    double t0 = ipc_now();
    close(go[1]); /* go */
    int failed = 0;
    for (int k = 0; k < n; k++) {
        int st = ipc_status(pid[k]);
        if (st != 0)
            fprintf(stderr, "importer %d ended with %d\n", k, st);
        failed += st != 0;
    }
    double took = ipc_now() - t0;
    EXPECT(failed == 0);
    for (int k = 0; k < n; k++)
        EXPECT(ipc_read_line(out[0], line, sizeof line) == 0 &&
               sscanf(line, "%lf %lf", &t[k][0], &t[k][1]) == 2);
    close(out[0]);
    for (int j = 0; j < SHARED_PIECES; j++)
        EXPECT(has_words(s, (size_t)j * IPC_PIECE, SEED_SHARED + (uint32_t)j));
    for (int k = 0; k < n; k++) {
        if (!has_words(s, region_of(k, n), SEED_REGION + (uint32_t)k) ||
            !has_words(own[k], IPC_WORDS * 4, SEED_OWN + (uint32_t)k + WRITTEN_BACK)) {
            fprintf(stderr, "importer %d's words did not come back\n", k);
            return 1;
        }
        CHECK(gpuFree(own[k]));
    }
    EXPECT(fds_back_to(fds, 3));
    EXPECT(threads_back_to(threads, 3));
    int most = most_at_once((const double(*)[2])t, n);
    EXPECT(n < 2 || most >= 2);
    CHECK(gpuFree(s));
    printf("ipc: %d importers at once (at most %d opening together), %d opens of a block over %d "
           "mappings and of one of their own each, in %.2f s, bytes checked both ways; exporter "
           "descriptors %d before, %d after, threads %d, %d\n", n, most, 2 * n, SHARED_PIECES,
           took, fds, open_fds(), threads, live_threads());
    free(own);
    free(pid);
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    raise_fd_limit();
    if (argc == 4 && strcmp(argv[1], "rounds-importer") == 0)
        return rounds_importer(atoi(argv[2]), atoi(argv[3]));
    if (argc == 8 && strcmp(argv[1], "load-importer") == 0)
        return load_importer(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]), atoi(argv[6]),
                             atoi(argv[7]));
    if (argc == 2 && strcmp(argv[1], "rounds") == 0)
        return rounds();
    EXPECT(argc == 2 && strcmp(argv[1], "importers") == 0);
    return importers();
}
