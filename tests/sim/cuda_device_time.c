/* cuda_device_time.c: the simulated device keeps its own time, not the scheduler's
 * (docs/simdevice.md, "The device's own time"). Run with SIMDEV_OP_LATENCY_US at 200 ms, so that
 * what must not be done yet cannot be done by the time a check looks, however slow the host. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <time.h>

#include "check.h"

static void gate_fn(void *g) { gate_wait(g); }

static pthread_t ran_on;
static void where_fn(void *unused)
{
    (void)unused;
    ran_on = pthread_self();
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A query does not find small work done before the device's latency has passed, and a
 * synchronization waits for it: the latency holds whoever runs the work. */
static void test_latency_holds(void)
{
    cudaStream_t s;
    void *p;
    CHECK_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    CHECK_EQ(cudaMalloc(&p, 64), cudaSuccess);
    double t0 = now_s();
    CHECK_EQ(cudaMemsetAsync(p, 1, 8, s), cudaSuccess);
    CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK(now_s() - t0 >= 0.2);
    CHECK_EQ(cudaStreamQuery(s), cudaSuccess);
    CHECK_EQ(cudaFree(p), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
}

/* A thread that waits runs the device's own work, never the program's code: a host function
 * runs on the driver's thread even while the program waits for it. */
static void test_waiter_never_runs_host_functions(void)
{
    cudaStream_t s;
    CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(s, where_fn, NULL), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK(!pthread_equal(ran_on, pthread_self()));
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
}

/* Work queued behind a host function is not run ahead of it, by a query or by anyone: an event
 * recorded behind a held host function stays pending past its latency, then completes in order. */
static void test_no_work_jumps_the_queue(void)
{
    cudaStream_t s;
    cudaEvent_t e;
    struct gate g = {0};
    CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
    CHECK_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(s, gate_fn, &g), cudaSuccess);
    CHECK_EQ(cudaEventRecord(e, s), cudaSuccess);
    usleep(300 * 1000); /* past the latency */
    CHECK_EQ(cudaEventQuery(e), cudaErrorNotReady);
    CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady);
    gate_open(&g);
    CHECK_EQ(cudaEventSynchronize(e), cudaSuccess);
    CHECK(gate_flag(&g.done));
    CHECK_EQ(cudaEventDestroy(e), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
}

int main(void)
{
    sim_begin("simdevice cuda driver");
    test_latency_holds();
    test_waiter_never_runs_host_functions();
    test_no_work_jumps_the_queue();
    printf("cuda_device_time: all passed\n");
    return 0;
}
