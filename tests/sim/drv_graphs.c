/* drv_graphs.c: graphs made by stream capture in the simulated driver, one case per process:
 * launches replay the captured copies, sets and host functions on the launch stream; memory
 * nodes own memory reachable only between their allocation and free; streams fork into a
 * capture and must join it again; the capture info calls; the entry points' lookup. */
#include <pthread.h>

#include "drv_capture_check.h"

static void count_up(void *n)
{
    __atomic_add_fetch((int *)n, 1, __ATOMIC_SEQ_CST);
}

/* Copies, a set and a host function captured once, replayed by every launch on any stream,
 * from an executable graph that outlives its graph. */
static void replay(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING), t = cap_stream(CU_STREAM_DEFAULT);
    CUdeviceptr a, b;
    unsigned char src[64], out[64];
    int ran = 0;
    memset(src, 5, sizeof src);
    CU_OK(cuMemAlloc(&a, sizeof src));
    CU_OK(cuMemAlloc(&b, sizeof src));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemcpyHtoDAsync(a, src, sizeof src, s));
    CU_OK(cuMemsetD8Async(a + 8, 7, 8, s));
    CU_OK(cuMemcpyDtoDAsync(b, a, sizeof src, s));
    CU_OK(cuLaunchHostFunc(s, count_up, &ran));
    CUgraph g = cap_end_ok(s);
    CUgraphExec x, y;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CUDA_GRAPH_INSTANTIATE_PARAMS params = {.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD,
                                            .hUploadStream = s};
    CU_OK(cuGraphInstantiateWithParams(&y, g, &params));
    CHECK_EQ(params.result_out, CUDA_GRAPH_INSTANTIATE_SUCCESS);
    CU_OK(cuGraphUpload(x, s));
    CU_OK(cuGraphDestroy(g));
    CU_OK(cuGraphLaunch(x, t));
    CU_OK(cuStreamSynchronize(t));
    CU_OK(cuMemcpyDtoH(out, b, sizeof out));
    CHECK_EQ(out[0], 5);
    CHECK_EQ(out[8], 7);
    CHECK_EQ(out[16], 5);
    CHECK_EQ(gate_flag(&ran), 1);
    CU_OK(cuMemsetD8(b, 0, sizeof src));
    CU_OK(cuCtxSynchronize()); /* the set runs on the legacy stream, s is non-blocking */
    CU_OK(cuGraphLaunch(y, s));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemcpyDtoH(out, b, sizeof out));
    CHECK_EQ(out[9], 7);
    CHECK_EQ(gate_flag(&ran), 3);
    CU_OK(cuGraphExecDestroy(x));
    CU_OK(cuGraphExecDestroy(y));
    CHECK_EQ(cuGraphLaunch(x, s), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(cuGraphDestroy(g), CUDA_ERROR_INVALID_VALUE);
}

/* An allocation node's memory: an address at capture, counted against the device from then
 * on, usable inside each launch, given back with the last graph holding it. */
static void memory_nodes(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr p, g_mem = 0;
    unsigned char out[4096];
    CU_OK(cuMemAlloc(&p, sizeof out));
    uint64_t before = sim_counters(0).reserved_bytes;
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemAllocAsync(&g_mem, sizeof out, s));
    CHECK(g_mem != 0 && g_mem != p);
    CU_OK(cuMemsetD8Async(g_mem, 0x5a, sizeof out, s));
    CU_OK(cuMemcpyDtoDAsync(p, g_mem, sizeof out, s));
    CU_OK(cuMemFreeAsync(g_mem, s));
    CUgraph g = cap_end_ok(s);
    CHECK_EQ(sim_counters(0).reserved_bytes, before + sizeof out);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphDestroy(g));
    for (int i = 0; i < 3; i++) {
        CU_OK(cuMemsetD8(p, 0, sizeof out));
        CU_OK(cuCtxSynchronize());
        CU_OK(cuGraphLaunch(x, s));
        CU_OK(cuStreamSynchronize(s));
        CU_OK(cuMemcpyDtoH(out, p, sizeof out));
        CHECK_EQ(out[100], 0x5a);
    }
    /* Freed inside the graph: a free outside it is a bad free. */
    CHECK_EQ(cuMemFreeAsync(g_mem, s), CUDA_ERROR_INVALID_VALUE);
    CHECK_EQ(sim_counters(0).faults, 0);
    CU_OK(cuGraphExecDestroy(x));
    CHECK_EQ(sim_counters(0).reserved_bytes, before);
}

/* Graph memory without a free node outlives the launch until freed outside the graph; after
 * that free, touching it faults as freed memory does. */
static void memory_after_free(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr g_mem = 0;
    unsigned char out[512];
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemAllocAsync(&g_mem, sizeof out, s));
    CU_OK(cuMemsetD8Async(g_mem, 3, sizeof out, s));
    CUgraph g = cap_end_ok(s);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemcpyDtoH(out, g_mem, sizeof out));
    CHECK_EQ(out[511], 3);
    CU_OK(cuMemFreeAsync(g_mem, s));
    CHECK_EQ(cuMemFreeAsync(g_mem, s), CUDA_ERROR_INVALID_VALUE);
    CU_OK(cuMemsetD8Async(g_mem, 1, sizeof out, s));
    CHECK_EQ(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
    CHECK_EQ(sim_counters(0).faults, 1);
}

struct grower {
    struct gate *gate;
    uint64_t syncs;
    CUcontext ctx;
};

/* Once the free waits for the device, captures twenty more graph allocations (the table of
 * graph memory outgrows its first sixteen slots and moves), then lets the device finish. */
static void *grow_table(void *arg)
{
    struct grower *gr = arg;
    CU_OK(cuCtxSetCurrent(gr->ctx));
    while (sim_counters(0).device_syncs == gr->syncs)
        usleep(200);
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING);
    for (int i = 0; i < 20; i++) {
        CUdeviceptr p = 0;
        CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
        CU_OK(cuMemAllocAsync(&p, 512, s));
        (void)cap_end_ok(s); /* kept: its memory stays in the table */
    }
    gate_open(gr->gate);
    return NULL;
}

/* A plain free of graph memory waits for the device with the driver's lock let go. Another
 * thread's captures may move the table of graph memory meanwhile: the free must still unmap
 * its own record, so that a touch after it faults. */
static void memory_free_while_table_grows(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING), busy = cap_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr g_mem = 0;
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemAllocAsync(&g_mem, 512, s));
    CUgraph g = cap_end_ok(s);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    struct gate gate = {0};
    CU_OK(cuLaunchHostFunc(busy, drv_gate_fn, &gate));
    CUcontext ctx;
    CU_OK(cuCtxGetCurrent(&ctx));
    struct grower gr = {&gate, sim_counters(0).device_syncs, ctx};
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, grow_table, &gr), 0);
    CU_OK(cuMemFree(g_mem));
    CHECK_EQ(pthread_join(t, NULL), 0);
    CU_OK(cuMemsetD8Async(g_mem, 1, 512, s));
    CHECK_EQ(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
}

/* Before any launch the memory is not there to touch. */
static void memory_before_launch(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr g_mem = 0;
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemAllocAsync(&g_mem, 512, s));
    CUgraph g = cap_end_ok(s);
    CU_OK(cuMemsetD8(g_mem, 1, 512));
    CHECK_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
    (void)g;
}

/* A second stream forked by waiting for an event recorded in the capture takes part in it and
 * must be joined back before the end; an end on it does not match. */
static void fork_join(void)
{
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING), t = cap_stream(CU_STREAM_NON_BLOCKING);
    CUevent fork, join;
    CUdeviceptr p;
    unsigned char out[16];
    CU_OK(cuEventCreate(&fork, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventCreate(&join, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuMemAlloc(&p, sizeof out));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuMemsetD8Async(p, 1, sizeof out, s));
    CU_OK(cuEventRecord(fork, s));
    CU_OK(cuStreamWaitEvent(t, fork, 0));
    CHECK_EQ(cap_status(t), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CU_OK(cuMemsetD8Async(p + 8, 2, 8, t));
    CU_OK(cuEventRecord(join, t));
    CU_OK(cuStreamWaitEvent(s, join, 0));
    CUgraph g = cap_end_ok(s);
    CHECK_EQ(cap_status(t), CU_STREAM_CAPTURE_STATUS_NONE);
    CUgraphExec x;
    CU_OK(cuGraphInstantiate(&x, g, 0));
    CU_OK(cuGraphLaunch(x, s));
    CU_OK(cuStreamSynchronize(s));
    CU_OK(cuMemcpyDtoH(out, p, sizeof out));
    CHECK_EQ(out[0], 1);
    CHECK_EQ(out[15], 2);

    /* Forked and never joined. */
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuEventRecord(fork, s));
    CU_OK(cuStreamWaitEvent(t, fork, 0));
    CU_OK(cuMemsetD8Async(p, 3, 8, t));
    CUgraph none = (CUgraph)&none;
    CHECK_EQ(cuStreamEndCapture(s, &none), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
    CHECK(none == NULL);
    CHECK_EQ(cap_status(t), CU_STREAM_CAPTURE_STATUS_NONE);

    /* Ended on the forked stream. */
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuEventRecord(fork, s));
    CU_OK(cuStreamWaitEvent(t, fork, 0));
    CHECK_EQ(cuStreamEndCapture(t, &none), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    cap_end_invalidated(s);
}

/* Two captures cannot merge; work from outside a capture cannot become its dependency. */
static void merge_isolation(void)
{
    CUstream a = cap_stream(CU_STREAM_NON_BLOCKING), b = cap_stream(CU_STREAM_NON_BLOCKING);
    CUstream u = cap_stream(CU_STREAM_NON_BLOCKING);
    CUevent in_a, outside;
    CU_OK(cuEventCreate(&in_a, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventCreate(&outside, CU_EVENT_DISABLE_TIMING));
    CU_OK(cuEventRecord(outside, u));
    CU_OK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuStreamBeginCapture(b, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(cuEventRecord(in_a, a));
    CHECK_EQ(cuStreamWaitEvent(b, in_a, 0), CUDA_ERROR_STREAM_CAPTURE_MERGE);
    CHECK_EQ(cuStreamWaitEvent(a, outside, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
    cap_end_invalidated(a);
    cap_end_invalidated(b);
}

typedef CUresult (*info_v1_fn)(CUstream, CUstreamCaptureStatus *, cuuint64_t *);
typedef CUresult (*info_v2_fn)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                               const CUgraphNode **, size_t *);

static void *lookup(const char *name, int version, int flags)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    CU_OK(cuGetProcAddress(name, &fn, version, (cuuint64_t)flags, &st));
    CHECK(fn != NULL);
    return fn;
}

/* The three forms of cuStreamGetCaptureInfo: a unique id, the graph and the dependencies of
 * the next node; found by cuGetProcAddress at their versions. */
static void capture_info(void)
{
    info_v1_fn v1;
    info_v2_fn v2;
    void *p1 = lookup("cuStreamGetCaptureInfo", 10010, CU_GET_PROC_ADDRESS_DEFAULT);
    void *p2 = lookup("cuStreamGetCaptureInfo", 11030, CU_GET_PROC_ADDRESS_DEFAULT);
    memcpy(&v1, &p1, sizeof v1);
    memcpy(&v2, &p2, sizeof v2);
    CUstream s = cap_stream(CU_STREAM_NON_BLOCKING);
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 64));
    CUstreamCaptureStatus st;
    cuuint64_t id1 = 0, id2 = 0;
    CU_OK(v1(s, &st, &id1));
    CHECK_EQ(st, CU_STREAM_CAPTURE_STATUS_NONE);
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(v1(s, &st, &id1));
    CHECK_EQ(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUgraph g = NULL;
    const CUgraphNode *deps = NULL;
    size_t n = 9;
    CU_OK(v2(s, &st, &id2, &g, &deps, &n));
    CHECK(g != NULL);
    CHECK_EQ(n, 0);
    CU_OK(cuMemsetD8Async(p, 0, 64, s));
    const CUgraphEdgeData *edges = NULL;
    CU_OK(cuStreamGetCaptureInfo(s, &st, &id2, &g, &deps, &edges, &n));
    CHECK_EQ(n, 1);
    CHECK(deps != NULL && deps[0] != NULL && edges != NULL);
    CHECK_EQ(edges[0].type, 0);
    CHECK_EQ(id1, id2);
    CU_OK(cuGraphDestroy(cap_end_ok(s)));
    CU_OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CU_OK(v1(s, &st, &id2));
    CHECK(id2 != id1);
    cap_end_ok(s);
}

/* Each entry point at each ABI version cudaTypedefs.h names, legacy and per-thread. */
static void lookups(void)
{
    static const struct {
        const char *name;
        int version;
    } names[] = {
        {"cuStreamBeginCapture", 10000}, {"cuStreamBeginCapture", 10010},
        {"cuStreamEndCapture", 10000}, {"cuStreamIsCapturing", 10000},
        {"cuStreamGetCaptureInfo", 10010}, {"cuStreamGetCaptureInfo", 11030},
        {"cuStreamGetCaptureInfo", 12030}, {"cuThreadExchangeStreamCaptureMode", 10010},
        {"cuGraphInstantiate", 10000}, {"cuGraphInstantiate", 11000},
        {"cuGraphInstantiateWithFlags", 11040}, {"cuGraphInstantiateWithParams", 12000},
        {"cuGraphUpload", 11010}, {"cuGraphLaunch", 10000}, {"cuGraphExecDestroy", 10000},
        {"cuGraphDestroy", 10000},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        lookup(names[i].name, names[i].version, CU_GET_PROC_ADDRESS_DEFAULT);
        lookup(names[i].name, names[i].version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    }
    void *v2 = lookup("cuStreamBeginCapture", 10010, CU_GET_PROC_ADDRESS_DEFAULT);
    void *v2_pt = lookup("cuStreamBeginCapture", 10010,
                         CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    CHECK(v2 == dlsym(RTLD_DEFAULT, "cuStreamBeginCapture_v2"));
    CHECK(v2_pt == dlsym(RTLD_DEFAULT, "cuStreamBeginCapture_v2_ptsz"));
    CHECK(lookup("cuStreamBeginCapture", 10000, CU_GET_PROC_ADDRESS_DEFAULT) ==
          dlsym(RTLD_DEFAULT, "cuStreamBeginCapture"));
}

/* The per-thread default stream captures in the _ptsz forms, each thread its own. */
static void per_thread_stream(void)
{
    typedef CUresult (*begin_fn)(CUstream, CUstreamCaptureMode);
    typedef CUresult (*end_fn)(CUstream, CUgraph *);
    begin_fn begin;
    end_fn end;
    void *pb = lookup("cuStreamBeginCapture", 10010, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    void *pe = lookup("cuStreamEndCapture", 10000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    memcpy(&begin, &pb, sizeof begin);
    memcpy(&end, &pe, sizeof end);
    CU_OK(begin(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CHECK_EQ(cap_status(CU_STREAM_PER_THREAD), CU_STREAM_CAPTURE_STATUS_ACTIVE);
    CUstreamCaptureStatus st;
    CHECK_EQ(cuStreamIsCapturing(CU_STREAM_LEGACY, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    CUgraph g = NULL;
    CU_OK(end(NULL, &g));
    CHECK(g != NULL);
}

static const struct sim_case cases[] = {
    {"replay", replay}, {"memory_nodes", memory_nodes}, {"memory_after_free", memory_after_free},
    {"memory_free_while_table_grows", memory_free_while_table_grows},
    {"memory_before_launch", memory_before_launch}, {"fork_join", fork_join},
    {"merge_isolation", merge_isolation}, {"capture_info", capture_info}, {"lookups", lookups},
    {"per_thread_stream", per_thread_stream},
};

int main(int argc, char **argv)
{
    drv_begin();
    drv_use_primary(0);
    return sim_run_case("drv_graphs", argc, argv, cases, sizeof cases / sizeof cases[0]);
}
