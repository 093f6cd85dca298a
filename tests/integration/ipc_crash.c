/* ipc_crash.c: processes of the cache's IPC exchange (shim/ipc/mapped.c) killed with SIGKILL,
 * as a crash or the OOM killer ends them, at the moments that matter:
 *   "exporter-killed"  this process only runs the others. (1) An exporter exports a block and
 *                      an importer opens it; the exporter writes the block once more and is
 *                      killed; the importer must still read the exporter's last bytes, write
 *                      and read its own, and close; opening the record again is refused at
 *                      once. (2) Another exporter, of a block over 300 mappings (three
 *                      messages of descriptors), is killed by the importer itself at its first
 *                      imported mapping, midway through the exchange: the open must fail with
 *                      GPU_IPC_REFUSED (the driver's code for a bad handle) in well under the
 *                      importer's 10 s timeout, leave nothing mapped and no descriptor open
 *                      (the simulator's counters tell), and not crash the importer.
 *   "importer-killed"  this process exports. (1) An importer opens a block, writes to it and
 *                      is killed while it holds the mapping: the exporter sees the write and is
 *                      back to its descriptors. (2) Six importers of a block over 300 mappings
 *                      each kill themselves midway through the exchange (at their first, 100th,
 *                      129th or 200th imported mapping), while the exporter makes or sends the
 *                      next message: more than the exporter's 4 messages in flight, so one it
 *                      failed to give back would stall every later importer. The exporter must
 *                      be back to its descriptors and threads, free the block, get the same
 *                      block back from the cache, export it again, and serve an importer of
 *                      both blocks, bytes checked both ways.
 *   "importer-killed-awaited"  the same, but the importers die (at their first, 50th or 100th
 *                      mapping) while the exporter awaits their acknowledgement of a message
 *                      it sent: only they pay for their mappings (see importer_killed).
 * SIMDEV_VMM_CREATE_US=1000 makes each mapping's export or import take a millisecond, so that
 * a kill at an importer's first mapping lands a hundred milliseconds or more before the
 * exchange could end: for both sides in "importer-killed" (the test sets it), for the
 * importers alone in "importer-killed-awaited", for the exporters in "exporter-killed" (the
 * program sets it, and a tenth of it for the importer that kills one midway, which then sees
 * the end of the connection within milliseconds of the kill). An importer whose open ended
 * first anyway is run again (at most 20). */
#include <pthread.h>
#include <stdatomic.h>

#include "ipc_procs.h"
#include "ipc/wire.h"
#include "open_fds.h"

#define SIZE (4 << 20)
#define PIECES 300 /* three messages of descriptors (CA_IPC_CHUNK 128) */
#define MIDWAY_KILLS 6
#define OPEN_ENDED 2 /* an importer's status: its open ended before it was killed */
#define SEED_A 0xa11ceu
#define SEED_B 0xb0b0u
#define SEED_C 0xc0ffeeu
#define WRITTEN_BACK 1000000u

/* Words at the start and at the end of a block of SIZE: the whole of it is mapped. */
static void put_ends(void *p, uint32_t seed)
{
    put_words(p, 0, seed);
    put_words(p, SIZE - IPC_WORDS * 4, seed + 1);
}

static int has_ends(const void *p, uint32_t seed)
{
    return has_words(p, 0, seed) && has_words(p, SIZE - IPC_WORDS * 4, seed + 1);
}

/* Kills `victim` once `at` mappings in all have been imported into this process, and notes
 * when, and how many had been imported by then (read after the kill: no fewer than at the
 * victim's death). */
typedef struct watch {
    simdev_get_counters_fn counters;
    uint64_t at, imported;
    pid_t victim;
    double when;
    atomic_int fired, stop;
    pthread_t thread;
} watch;

static void *watching(void *arg)
{
    watch *w = arg;
    while (!atomic_load(&w->stop)) {
        struct simdev_counters c;
        w->counters(0, &c);
        if (c.vmm_imports >= w->at) {
            kill(w->victim, SIGKILL);
            w->when = ipc_now();
            w->counters(0, &c);
            w->imported = c.vmm_imports - (w->at - 1);
            atomic_store(&w->fired, 1);
            return NULL;
        }
        nanosleep(&(struct timespec){0, 100 * 1000}, NULL);
    }
    return NULL;
}

/* Starts watching: the victim is killed at the nth mapping imported from now. */
static void watch_start(watch *w, pid_t victim, uint64_t nth)
{
    w->counters = ipc_counters_fn();
    w->victim = victim;
    w->at = sim_counters(0).vmm_imports + nth;
    atomic_init(&w->fired, 0);
    atomic_init(&w->stop, 0);
    EXPECT(pthread_create(&w->thread, NULL, watching, w) == 0);
}

/* Stops watching: whether the victim was killed (then w->when and w->imported tell). */
static int watch_stop(watch *w)
{
    atomic_store(&w->stop, 1);
    EXPECT(pthread_join(w->thread, NULL) == 0);
    return atomic_load(&w->fired);
}

/* An open of a record whose exporter is gone: refused at once, nothing left open. */
static void refused_at_once(gpuIpcMemHandle_t h)
{
    int fds = open_fds();
    void *p = NULL;
    double t0 = ipc_now();
    gpuError_t e = gpuIpcOpenMemHandle(&p, h);
    double took = ipc_now() - t0;
    (void)gpuGetLastError();
    if (e != GPU_IPC_REFUSED || took > 1.0) {
        fprintf(stderr, "the record of a killed exporter opened with %d in %.2f s\n", (int)e,
                took);
        exit(1);
    }
    EXPECT(open_fds() == fds);
}

/* ---- "exporter-killed" ---- */

/* The exporter: a block of SIZE (pieces 1) or over `pieces` mappings, its words written and
 * its record sent on `out`; then, for each "B" on ctl, another pattern written and "b" sent on
 * ack; it exits when ctl ends (the test gone) unless killed before. */
static int serve(int pieces, int out, int ctl, int ack)
{
    /* Before the first call, which reads the simulator's costs. */
    EXPECT(setenv("SIMDEV_VMM_CREATE_US", "1000", 1) == 0);
    void *p = pieces > 1 ? ipc_block_over(pieces) : NULL;
    if (pieces > 1) {
        for (int k = 0; k < pieces; k++)
            put_words(p, (size_t)k * IPC_PIECE, SEED_A + (uint32_t)k);
    } else {
        CHECK(gpuMalloc(&p, SIZE));
        put_ends(p, SEED_A);
    }
    gpuIpcMemHandle_t h;
    CHECK(gpuIpcGetMemHandle(&h, p));
    ipc_send_handle(out, &h);
    char c;
    while (read(ctl, &c, 1) == 1) {
        EXPECT(c == 'B' && pieces == 1);
        put_ends(p, SEED_B);
        CHECK(gpuDeviceSynchronize()); /* landed, before the test kills this process */
        EXPECT(write(ack, "b", 1) == 1);
    }
    return 0;
}

/* The importer that holds the block across its exporter's death: opens it, says so on `out`,
 * waits for "g" on `in` (the exporter killed), then reads, writes and closes. */
static int hold(const char *hex, int in, int out)
{
    gpuIpcMemHandle_t h;
    void *p = NULL;
    char c;
    EXPECT(ipc_peer_unhex(hex, &h) == 0);
    ipc_warm_up();
    int fds = open_fds();
    struct simdev_counters before = sim_counters(0);
    CHECK(gpuIpcOpenMemHandle(&p, h));
    EXPECT(has_ends(p, SEED_A));
    EXPECT(write(out, "o", 1) == 1);
    EXPECT(read(in, &c, 1) == 1 && c == 'g');
    /* The exporter is dead: what it wrote last is there, and the memory is still the
     * importer's to read and write until it closes it. */
    if (!has_ends(p, SEED_B)) {
        fprintf(stderr, "hold: the exporter's last bytes are gone after its death\n");
        return 3;
    }
    put_words(p, 4096, SEED_C);
    EXPECT(has_words(p, 4096, SEED_C) && has_ends(p, SEED_B));
    CHECK(gpuGetLastError());
    CHECK(gpuIpcCloseMemHandle(p));
    struct simdev_counters after = sim_counters(0);
    EXPECT(after.maps - before.maps == after.unmaps - before.unmaps);
    EXPECT(after.maps > before.maps);
    EXPECT(fds_back_to(fds, 2));
    refused_at_once(h);
    printf("ipc: an importer read, wrote and closed a block after its exporter was killed; "
           "descriptors %d before the open, %d after the close\n", fds, open_fds());
    return 0;
}

/* The importer that kills its exporter at its first imported mapping. Killed before the first
 * message's mappings are all imported, the exporter cannot have sent the last message (it
 * waits for the second's acknowledgement, which follows them): the open must fail. */
static int midway(const char *hex, pid_t exporter)
{
    gpuIpcMemHandle_t h;
    void *p = NULL;
    watch w;
    EXPECT(ipc_peer_unhex(hex, &h) == 0);
    /* A tenth of the exporter's cost, before the first call reads it: the first message's
     * mappings take long enough to be killed among, quickly enough to fail soon after. */
    EXPECT(setenv("SIMDEV_VMM_CREATE_US", "100", 1) == 0);
    ipc_warm_up();
    int fds = open_fds();
    struct simdev_counters before = sim_counters(0);
    watch_start(&w, exporter, 1);
    gpuError_t e = gpuIpcOpenMemHandle(&p, h);
    double end = ipc_now();
    int fired = watch_stop(&w);
    if (fired && w.imported < CA_IPC_CHUNK && e == gpuSuccess) {
        fprintf(stderr, "midway: the open succeeded though its exporter was killed after %llu "
                "of %d mappings\n", (unsigned long long)w.imported, PIECES);
        return 1;
    }
    if (e == gpuSuccess) { /* the kill came too late to tell */
        CHECK(gpuIpcCloseMemHandle(p));
        return OPEN_ENDED;
    }
    (void)gpuGetLastError();
    struct simdev_counters after = sim_counters(0);
    unsigned long long imported = after.vmm_imports - before.vmm_imports;
    if (!fired || e != GPU_IPC_REFUSED || end - w.when > 5.0) {
        fprintf(stderr, "midway: the open answered %d, %.2f s after the kill (exporter %s)\n",
                (int)e, fired ? end - w.when : 0.0, fired ? "killed" : "alive");
        return 1;
    }
    EXPECT(imported > 0 && imported < PIECES);
    EXPECT(after.maps - before.maps == after.unmaps - before.unmaps);
    EXPECT(fds_back_to(fds, 2));
    refused_at_once(h);
    printf("ipc: exporter killed midway, after %llu of %d mappings: the open refused %.0f ms "
           "after the kill, %llu mappings imported and all unmapped; descriptors %d before, %d "
           "after\n", (unsigned long long)w.imported, PIECES, (end - w.when) * 1e3, imported,
           fds, open_fds());
    return 0;
}

/* Starts an exporter of `pieces`: its pid, its record's hex in hex, its control pipe's write
 * end in *ctl and its acknowledgements' read end in *ack. */
static pid_t start_exporter(int pieces, char hex[2 * IPC_PEER_HANDLE + 1], int *ctl, int *ack)
{
    int out[2], c[2], a[2];
    char n[16], fo[16], fc[16], fa[16];
    ipc_pipe(out);
    ipc_pipe(c);
    ipc_pipe(a);
    snprintf(n, sizeof n, "%d", pieces);
    char *args[] = {"ipc-peer", "serve", n, IPC_FD_ARG(fo, out[1]), IPC_FD_ARG(fc, c[0]),
                    IPC_FD_ARG(fa, a[1]), NULL};
    int keep[] = {out[1], c[0], a[1]};
    pid_t pid = ipc_spawn(args, keep, 3);
    EXPECT(pid > 0);
    close(out[1]);
    close(c[0]);
    close(a[1]);
    EXPECT(ipc_read_line(out[0], hex, 2 * IPC_PEER_HANDLE + 1) == 0);
    close(out[0]);
    *ctl = c[1];
    *ack = a[0];
    return pid;
}

static int exporter_killed(void)
{
    char hex[2 * IPC_PEER_HANDLE + 1], fi[16], fo[16], c;
    int ctl, ack, go[2], opened[2], killed = 0, tries = 0;
    /* (1) the holder. */
    pid_t e = start_exporter(1, hex, &ctl, &ack);
    ipc_pipe(go);
    ipc_pipe(opened);
    char *hold_args[] = {"ipc-peer", "hold", hex, IPC_FD_ARG(fi, go[0]),
                         IPC_FD_ARG(fo, opened[1]), NULL};
    int keep[] = {go[0], opened[1]};
    pid_t imp = ipc_spawn(hold_args, keep, 2);
    EXPECT(imp > 0);
    close(go[0]);
    close(opened[1]);
    EXPECT(read(opened[0], &c, 1) == 1 && c == 'o');
    EXPECT(write(ctl, "B", 1) == 1 && read(ack, &c, 1) == 1 && c == 'b');
    EXPECT(kill(e, SIGKILL) == 0 && ipc_status(e) == 128 + SIGKILL);
    killed++;
    EXPECT(write(go[1], "g", 1) == 1);
    EXPECT(ipc_status(imp) == 0);
    close(ctl);
    close(ack);
    /* (2) killed midway through the exchange, by the importer. */
    for (int st = OPEN_ENDED; st == OPEN_ENDED && tries < 20; tries++) {
        char pid[16];
        e = start_exporter(PIECES, hex, &ctl, &ack);
        snprintf(pid, sizeof pid, "%d", (int)e);
        char *mid_args[] = {"ipc-peer", "midway", hex, pid, NULL};
        imp = ipc_spawn(mid_args, NULL, 0);
        EXPECT(imp > 0);
        st = ipc_status(imp);
        kill(e, SIGKILL); /* already dead unless the open ended first */
        EXPECT(ipc_status(e) == 128 + SIGKILL);
        close(ctl);
        close(ack);
        EXPECT(st == 0 || st == OPEN_ENDED);
        killed += st == 0;
    }
    EXPECT(killed == 2);
    printf("ipc: %d exporters killed (%d midway tries), every importer unharmed\n", killed,
           tries);
    return 0;
}

/* ---- "importer-killed" ---- */

/* The importer killed while it holds the block: opens it, writes SEED_C after its words, says
 * so on `out`, and waits on `in` (which only ends if the exporter died) to be killed. */
static int hold_forever(const char *hex, int in, int out)
{
    gpuIpcMemHandle_t h;
    void *p = NULL;
    char c;
    EXPECT(ipc_peer_unhex(hex, &h) == 0);
    CHECK(gpuIpcOpenMemHandle(&p, h));
    EXPECT(has_ends(p, SEED_A));
    put_words(p, 4096, SEED_C);
    CHECK(gpuDeviceSynchronize());
    EXPECT(write(out, "o", 1) == 1);
    return read(in, &c, 1) == 1 ? 3 : 4;
}

/* The importer that kills itself once the nth mapping of the block is imported. */
static int die_midway(const char *hex, const char *nth)
{
    gpuIpcMemHandle_t h;
    void *p = NULL;
    watch w;
    EXPECT(ipc_peer_unhex(hex, &h) == 0);
    ipc_warm_up();
    watch_start(&w, getpid(), (uint64_t)atoi(nth));
    gpuError_t e = gpuIpcOpenMemHandle(&p, h);
    (void)watch_stop(&w);
    if (e == gpuSuccess)
        CHECK(gpuIpcCloseMemHandle(p));
    return e == gpuSuccess ? OPEN_ENDED : 1;
}

/* The importer after the crashes: both blocks, read and written back. */
static int check(const char *hex_x, const char *hex_p)
{
    gpuIpcMemHandle_t hx, hp;
    void *x = NULL, *p = NULL;
    EXPECT(ipc_peer_unhex(hex_x, &hx) == 0 && ipc_peer_unhex(hex_p, &hp) == 0);
    CHECK(gpuIpcOpenMemHandle(&x, hx));
    CHECK(gpuIpcOpenMemHandle(&p, hp));
    EXPECT(has_ends(x, SEED_B));
    put_words(x, 4096, SEED_C + 1);
    for (int k = 0; k < PIECES; k++) {
        EXPECT(has_words(p, (size_t)k * IPC_PIECE, SEED_A + (uint32_t)k));
        put_words(p, (size_t)k * IPC_PIECE, SEED_A + (uint32_t)k + WRITTEN_BACK);
    }
    CHECK(gpuIpcCloseMemHandle(p));
    CHECK(gpuIpcCloseMemHandle(x));
    return 0;
}

/* Runs an importer in `role` with the record and an extra argument; its status. */
static int run_importer(const char *role, const gpuIpcMemHandle_t *h, const char *extra)
{
    char hex[2 * IPC_PEER_HANDLE + 1];
    ipc_peer_hex(h, hex);
    char *args[] = {"ipc-peer", (char *)role, hex, (char *)extra, NULL};
    pid_t pid = ipc_spawn(args, NULL, 0);
    return pid > 0 ? ipc_status(pid) : -1;
}

/* With `awaited`, only the importers pay a millisecond a mapping: the exporter has sent the
 * next message long before and awaits its acknowledgement when they die, at their first,
 * 50th or 100th mapping. Otherwise both sides pay it, and the exporter is making or sending
 * the next message when they die, at their first, 100th, 129th or 200th mapping. */
static int importer_killed(int awaited)
{
    static const char *const making[MIDWAY_KILLS] = {"1", "100", "129", "200", "1", "129"};
    static const char *const acking[MIDWAY_KILLS] = {"1", "50", "100", "1", "50", "100"};
    const char *const *at = awaited ? acking : making;
    void *p = ipc_block_over(PIECES), *x = NULL, *again = NULL;
    gpuIpcMemHandle_t hx, hp;
    char fi[16], fo[16], c;
    int in[2], out[2], tries = 0;
    for (int k = 0; k < PIECES; k++)
        put_words(p, (size_t)k * IPC_PIECE, SEED_A + (uint32_t)k);
    CHECK(gpuMalloc(&x, SIZE));
    put_ends(x, SEED_A);
    CHECK(gpuIpcGetMemHandle(&hx, x));
    CHECK(gpuIpcGetMemHandle(&hp, p));
    /* The simulator read its costs when it started: this changes the children's only. */
    if (awaited)
        EXPECT(setenv("SIMDEV_VMM_CREATE_US", "1000", 1) == 0);
    int fds = open_fds(), threads = live_threads();
    /* (1) killed while it holds the mapping. */
    char hex[2 * IPC_PEER_HANDLE + 1];
    ipc_peer_hex(&hx, hex);
    ipc_pipe(in);
    ipc_pipe(out);
    char *args[] = {"ipc-peer", "hold-forever", hex, IPC_FD_ARG(fi, in[0]),
                    IPC_FD_ARG(fo, out[1]), NULL};
    int keep[] = {in[0], out[1]};
    pid_t imp = ipc_spawn(args, keep, 2);
    EXPECT(imp > 0);
    close(in[0]);
    close(out[1]);
    EXPECT(read(out[0], &c, 1) == 1 && c == 'o');
    EXPECT(has_words(x, 4096, SEED_C));
    EXPECT(kill(imp, SIGKILL) == 0 && ipc_status(imp) == 128 + SIGKILL);
    close(in[1]);
    close(out[0]);
    EXPECT(fds_back_to(fds, 3));
    /* (2) killed midway through the exchange. */
    for (int killed = 0; killed < MIDWAY_KILLS; tries++) {
        EXPECT(tries < 20);
        int st = run_importer("die-midway", &hp, at[killed]);
        EXPECT(st == 128 + SIGKILL || st == OPEN_ENDED);
        killed += st == 128 + SIGKILL;
    }
    EXPECT(fds_back_to(fds, 3));
    EXPECT(threads_back_to(threads, 3));
    /* The block freed and reused, exported again; both blocks served after the crashes. */
    CHECK(gpuFree(x));
    CHECK(gpuMalloc(&again, SIZE));
    EXPECT(again == x);
    put_ends(x, SEED_B);
    CHECK(gpuIpcGetMemHandle(&hx, x));
    char hex_p[2 * IPC_PEER_HANDLE + 1];
    ipc_peer_hex(&hp, hex_p);
    double t0 = ipc_now();
    EXPECT(run_importer("check", &hx, hex_p) == 0);
    double took = ipc_now() - t0;
    EXPECT(has_words(x, 4096, SEED_C + 1) && has_ends(x, SEED_B));
    for (int k = 0; k < PIECES; k++)
        EXPECT(has_words(p, (size_t)k * IPC_PIECE, SEED_A + (uint32_t)k + WRITTEN_BACK));
    EXPECT(fds_back_to(fds, 3));
    CHECK(gpuFree(x));
    CHECK(gpuFree(p));
    printf("ipc: 1 importer killed holding a block, %d killed midway (%d tries) while the "
           "exporter %s; exporter "
           "descriptors %d before, %d after, threads %d before, %d after; the block freed, "
           "reused and served again in %.2f s\n", MIDWAY_KILLS, tries,
           awaited ? "awaited their acknowledgement" : "made or sent the next message", fds, open_fds(), threads,
           live_threads(), took);
    return 0;
}

int main(int argc, char **argv)
{
    raise_fd_limit();
    if (argc == 6 && strcmp(argv[1], "serve") == 0)
        return serve(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    if (argc == 5 && strcmp(argv[1], "hold") == 0)
        return hold(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc == 4 && strcmp(argv[1], "midway") == 0)
        return midway(argv[2], (pid_t)atoi(argv[3]));
    if (argc == 5 && strcmp(argv[1], "hold-forever") == 0)
        return hold_forever(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc == 4 && strcmp(argv[1], "die-midway") == 0)
        return die_midway(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "check") == 0)
        return check(argv[2], argv[3]);
    if (argc == 2 && strcmp(argv[1], "exporter-killed") == 0)
        return exporter_killed();
    EXPECT(argc == 2 && (strcmp(argv[1], "importer-killed") == 0 ||
                         strcmp(argv[1], "importer-killed-awaited") == 0));
    return importer_killed(strcmp(argv[1], "importer-killed-awaited") == 0);
}
