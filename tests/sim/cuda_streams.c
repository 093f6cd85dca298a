/* cuda_streams.c: streams are truly asynchronous, legacy default-stream semantics, the
 * per-thread default stream, events and cross-stream waits, host functions in order. */
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "check.h"

static void gate_fn(void *g) { gate_wait(g); }
static void flag_fn(void *f) { __atomic_store_n((volatile int *)f, 1, __ATOMIC_SEQ_CST); }

/* Long enough for work that must not run to show it ran; the checks never depend on speed. */
static void settle(void) { usleep(100 * 1000); }

static void test_async_is_async(void)
{
    cudaStream_t s;
    cudaEvent_t e;
    struct gate g = {0};
    CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
    CHECK_EQ(cudaEventCreate(&e), cudaSuccess);
    CHECK_EQ(cudaEventQuery(e), cudaSuccess); /* never recorded: complete */
    CHECK_EQ(cudaLaunchHostFunc(s, gate_fn, &g), cudaSuccess);
    CHECK_EQ(cudaEventRecord(e, s), cudaSuccess);
    /* The host got control back while the worker is held: the enqueue did not run the work. */
    CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);
    CHECK_EQ(cudaEventQuery(e), cudaErrorNotReady);
    CHECK_EQ(cudaGetLastError(), cudaSuccess); /* NotReady is not an error */
    CHECK(!gate_flag(&g.done));
    gate_open(&g);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK(gate_flag(&g.done));
    CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
    CHECK_EQ(cudaEventQuery(e), cudaSuccess);
    CHECK_EQ(cudaEventDestroy(e), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
}

static void sleepy_fn(void *f)
{
    usleep(100 * 1000);
    flag_fn(f);
}

static void test_sleeping_host_fn_does_not_block(void)
{
    cudaStream_t s;
    volatile int flag = 0;
    CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(s, sleepy_fn, (void *)&flag), cudaSuccess);
    CHECK(!gate_flag(&flag));
    CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK(gate_flag(&flag));
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
}

static void test_legacy_waits_for_blocking_streams(void)
{
    cudaStream_t b;
    struct gate g = {0};
    volatile int flag = 0;
    CHECK_EQ(cudaStreamCreate(&b), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(b, gate_fn, &g), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(0, flag_fn, (void *)&flag), cudaSuccess);
    settle();
    CHECK(!gate_flag(&flag));
    CHECK_EQ(cudaStreamQuery(0), cudaErrorNotReady);
    gate_open(&g);
    CHECK_EQ(cudaStreamSynchronize(0), cudaSuccess);
    CHECK(gate_flag(&flag));
    CHECK_EQ(cudaStreamDestroy(b), cudaSuccess);
}

static void test_legacy_ignores_nonblocking_streams(void)
{
    cudaStream_t nb;
    struct gate g = {0};
    volatile int flag = 0;
    CHECK_EQ(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(nb, gate_fn, &g), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(cudaStreamLegacy, flag_fn, (void *)&flag), cudaSuccess);
    /* Would deadlock (watchdog) if the legacy stream waited for the held non-blocking one. */
    CHECK_EQ(cudaStreamSynchronize(0), cudaSuccess);
    CHECK(gate_flag(&flag));
    CHECK_EQ(cudaStreamQuery(nb), cudaErrorNotReady);
    gate_open(&g);
    CHECK_EQ(cudaStreamSynchronize(nb), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(nb), cudaSuccess);
}

static void test_blocking_streams_wait_for_legacy(void)
{
    cudaStream_t b, nb;
    struct gate g = {0};
    volatile int fb = 0, fnb = 0;
    CHECK_EQ(cudaStreamCreate(&b), cudaSuccess);
    CHECK_EQ(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(0, gate_fn, &g), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(b, flag_fn, (void *)&fb), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(nb, flag_fn, (void *)&fnb), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(nb), cudaSuccess); /* non-blocking: not held by legacy */
    CHECK(gate_flag(&fnb));
    settle();
    CHECK(!gate_flag(&fb));
    CHECK_EQ(cudaStreamQuery(b), cudaErrorNotReady);
    gate_open(&g);
    CHECK_EQ(cudaStreamSynchronize(b), cudaSuccess);
    CHECK(gate_flag(&fb));
    CHECK_EQ(cudaStreamDestroy(b), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(nb), cudaSuccess);
}

struct pt_arg {
    struct gate *g;
    volatile int synced;
};

static void *pt_other_thread(void *v)
{
    struct pt_arg *a = v;
    volatile int flag = 0;
    /* This thread's per-thread stream is not the main thread's held one. */
    CHECK_EQ(cudaLaunchHostFunc(cudaStreamPerThread, flag_fn, (void *)&flag), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
    CHECK(gate_flag(&flag));
    a->synced = 1;
    return NULL;
}

static void test_per_thread_default_stream(void)
{
    struct gate g = {0};
    volatile int flag = 0;
    CHECK_EQ(cudaLaunchHostFunc(cudaStreamPerThread, gate_fn, &g), cudaSuccess);
    CHECK_EQ(cudaStreamQuery(cudaStreamPerThread), cudaErrorNotReady);
    struct pt_arg a = {&g, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, pt_other_thread, &a) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(a.synced);
    /* The per-thread stream is blocking: legacy work waits for it. */
    CHECK_EQ(cudaLaunchHostFunc(0, flag_fn, (void *)&flag), cudaSuccess);
    settle();
    CHECK(!gate_flag(&flag));
    gate_open(&g);
    CHECK_EQ(cudaStreamSynchronize(0), cudaSuccess);
    CHECK(gate_flag(&flag));
    CHECK_EQ(cudaStreamQuery(cudaStreamPerThread), cudaSuccess);
}

static void test_event_wait_is_on_the_device_side(void)
{
    cudaStream_t s1, s2;
    cudaEvent_t e, t0, t1;
    struct gate g = {0};
    volatile int flag = 0;
    CHECK_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
    CHECK_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
    CHECK_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
    CHECK_EQ(cudaEventCreate(&t0), cudaSuccess);
    CHECK_EQ(cudaEventCreate(&t1), cudaSuccess);
    CHECK_EQ(cudaEventRecord(t0, s1), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(s1, gate_fn, &g), cudaSuccess);
    CHECK_EQ(cudaEventRecord(e, s1), cudaSuccess);
    CHECK_EQ(cudaEventRecord(t1, s1), cudaSuccess);
    CHECK_EQ(cudaStreamWaitEvent(s2, e, 0), cudaSuccess); /* returned: the host did not wait */
    CHECK_EQ(cudaLaunchHostFunc(s2, flag_fn, (void *)&flag), cudaSuccess);
    float ms = -1;
    CHECK_EQ(cudaEventElapsedTime(&ms, t0, t1), cudaErrorNotReady);
    settle();
    CHECK(!gate_flag(&flag));
    CHECK_EQ(cudaEventQuery(e), cudaErrorNotReady);
    gate_open(&g);
    CHECK_EQ(cudaStreamSynchronize(s2), cudaSuccess);
    CHECK(gate_flag(&flag));
    CHECK_EQ(cudaEventSynchronize(t1), cudaSuccess);
    CHECK_EQ(cudaEventElapsedTime(&ms, t0, t1), cudaSuccess);
    CHECK(ms >= 0);
    CHECK_EQ(cudaEventElapsedTime(&ms, t0, e), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    CHECK_EQ(cudaEventDestroy(e), cudaSuccess);
    CHECK_EQ(cudaEventDestroy(e), cudaErrorInvalidResourceHandle);
    CHECK_EQ(cudaEventDestroy(t0), cudaSuccess);
    CHECK_EQ(cudaEventDestroy(t1), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(s1), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(s2), cudaSuccess);
    cudaGetLastError();
}

static int order[200];
static volatile int order_n;
static void order_fn(void *v) { order[order_n++] = (int)(intptr_t)v; }
static cudaStream_t cb_stream;
static void CUDART_CB order_cb(cudaStream_t s, cudaError_t st, void *v)
{
    CHECK(s == cb_stream);
    CHECK_EQ(st, cudaSuccess);
    order[order_n++] = (int)(intptr_t)v;
}

static void test_host_functions_in_order(void)
{
    CHECK_EQ(cudaStreamCreate(&cb_stream), cudaSuccess);
    for (int i = 0; i < 200; i++) {
        if (i % 2)
            CHECK_EQ(cudaLaunchHostFunc(cb_stream, order_fn, (void *)(intptr_t)i), cudaSuccess);
        else
            CHECK_EQ(cudaStreamAddCallback(cb_stream, order_cb, (void *)(intptr_t)i, 0), cudaSuccess);
    }
    CHECK_EQ(cudaStreamSynchronize(cb_stream), cudaSuccess);
    CHECK_EQ(order_n, 200);
    for (int i = 0; i < 200; i++)
        CHECK_EQ(order[i], i);
    CHECK_EQ(cudaStreamAddCallback(cb_stream, order_cb, NULL, 1), cudaErrorInvalidValue);
    CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
    CHECK_EQ(cudaStreamDestroy(cb_stream), cudaSuccess);
}

static void test_destroy_returns_at_once(void)
{
    cudaStream_t s;
    struct gate g = {0};
    CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(s, gate_fn, &g), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess); /* with its worker held: must not wait */
    CHECK(!gate_flag(&g.done));
    CHECK_EQ(cudaStreamQuery(s), cudaErrorInvalidResourceHandle);
    gate_open(&g);
    CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess); /* the drained work still ran */
    CHECK(gate_flag(&g.done));
    cudaGetLastError();
}

int main(void)
{
    sim_begin("simdevice cuda driver");
    test_async_is_async();
    test_sleeping_host_fn_does_not_block();
    test_legacy_waits_for_blocking_streams();
    test_legacy_ignores_nonblocking_streams();
    test_blocking_streams_wait_for_legacy();
    test_per_thread_default_stream();
    test_event_wait_is_on_the_device_side();
    test_host_functions_in_order();
    test_destroy_returns_at_once();
    printf("cuda_streams: all passed\n");
    return 0;
}
