/* cuda_ptsz.c: compiled with CUDA_API_PER_THREAD_DEFAULT_STREAM, so stream 0 calls go to the
 * _ptsz/_ptds entry points: each host thread has its own blocking default stream. */
#include <cuda_runtime_api.h>
#include <pthread.h>

#include "check.h"

static void gate_fn(void *g) { gate_wait(g); }
static void flag_fn(void *f) { __atomic_store_n((volatile int *)f, 1, __ATOMIC_SEQ_CST); }

static void *other(void *v)
{
    volatile int *done = v;
    void *d;
    int x = 42, y = 0;
    /* Stream 0 of this thread is not the main thread's held stream. */
    CHECK_EQ(cudaMalloc(&d, sizeof x), cudaSuccess);
    CHECK_EQ(cudaMemcpy(d, &x, sizeof x, cudaMemcpyHostToDevice), cudaSuccess);
    CHECK_EQ(cudaMemcpyAsync(&y, d, sizeof y, cudaMemcpyDeviceToHost, 0), cudaSuccess);
    CHECK_EQ(cudaStreamSynchronize(0), cudaSuccess);
    CHECK_EQ(y, 42);
    *done = 1;
    return NULL;
}

int main(void)
{
    sim_begin("simdevice cuda driver");
    struct gate g = {0};
    volatile int done = 0, flag = 0;
    CHECK_EQ(cudaLaunchHostFunc(0, gate_fn, &g), cudaSuccess);
    CHECK_EQ(cudaStreamQuery(0), cudaErrorNotReady);
    CHECK_EQ(cudaStreamQuery(cudaStreamPerThread), cudaErrorNotReady);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other, (void *)&done) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK(done);
    /* The legacy stream still waits for this thread's (blocking) default stream. */
    CHECK_EQ(cudaLaunchHostFunc(cudaStreamLegacy, flag_fn, (void *)&flag), cudaSuccess);
    usleep(100 * 1000);
    CHECK(!gate_flag(&flag));
    gate_open(&g);
    CHECK_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
    CHECK(gate_flag(&flag));
    printf("cuda_ptsz: all passed\n");
    return 0;
}
