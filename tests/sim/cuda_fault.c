/* cuda_fault.c: device accesses to memory that is not one live allocation touch nothing, print
 * one line and make cudaErrorIllegalAddress sticky on that device until cudaDeviceReset.
 * Run with SIMDEV_DEVICES=2. */
#include <cuda_runtime_api.h>

#include "check.h"

static void gate_fn(void *g) { gate_wait(g); }

static void test_memset_of_freed_memory(void)
{
    void *p, *q;
    FILE *tmp;
    CHECK_EQ(cudaMalloc(&p, 4096), cudaSuccess);
    CHECK_EQ(cudaFree(p), cudaSuccess);
    int saved = capture_stderr(&tmp);
    CHECK_EQ(cudaMemset(p, 0, 256), cudaSuccess); /* queued: the fault happens when it runs */
    CHECK_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    int lines = release_stderr(tmp, saved, "illegal address: memset of 256 bytes");
    CHECK_EQ(lines, 1);
    CHECK_EQ(sim_counters(0).faults, 1);
    /* Sticky in the driver: every call of the device fails. NVIDIA's runtime clears its own
     * last error on cudaGetLastError, but the next call fails and records it again. */
    CHECK_EQ(cudaMalloc(&q, 16), cudaErrorIllegalAddress);
    CHECK_EQ(cudaStreamSynchronize(0), cudaErrorIllegalAddress);
    CHECK_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
    CHECK_EQ(cudaMalloc(&q, 16), cudaErrorIllegalAddress);
    CHECK_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
    /* The other device is unaffected. */
    CHECK_EQ(cudaSetDevice(1), cudaSuccess);
    CHECK_EQ(cudaMalloc(&q, 16), cudaSuccess);
    CHECK_EQ(cudaFree(q), cudaSuccess);
    CHECK_EQ(cudaSetDevice(0), cudaSuccess);
    CHECK_EQ(cudaDeviceReset(), cudaSuccess);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    CHECK_EQ(cudaMalloc(&q, 16), cudaSuccess);
    CHECK_EQ(cudaFree(q), cudaSuccess);
}

static void test_free_async_then_access_from_other_stream(void)
{
    void *p;
    cudaStream_t s1, s2;
    cudaEvent_t e;
    struct gate g = {0};
    FILE *tmp;
    /* Pinned: into pageable memory the copy below would wait for the gate it queues behind. */
    unsigned char *buf;
    CHECK_EQ(cudaMallocHost((void **)&buf, 64), cudaSuccess);
    CHECK_EQ(cudaStreamCreate(&s1), cudaSuccess);
    CHECK_EQ(cudaStreamCreate(&s2), cudaSuccess);
    CHECK_EQ(cudaEventCreate(&e), cudaSuccess);
    CHECK_EQ(cudaMallocAsync(&p, 4096, s1), cudaSuccess);
    CHECK_EQ(cudaLaunchHostFunc(s1, gate_fn, &g), cudaSuccess);
    CHECK_EQ(cudaFreeAsync(p, s1), cudaSuccess);
    CHECK_EQ(cudaFreeAsync(p, s1), cudaErrorInvalidValue); /* already being freed */
    CHECK_EQ(cudaEventRecord(e, s1), cudaSuccess);
    CHECK_EQ(cudaStreamWaitEvent(s2, e, 0), cudaSuccess);
    /* Accepted now (p is still live), runs after the free took effect. */
    CHECK_EQ(cudaMemcpyAsync(buf, p, 64, cudaMemcpyDeviceToHost, s2), cudaSuccess);
    int saved = capture_stderr(&tmp);
    gate_open(&g);
    CHECK_EQ(cudaStreamSynchronize(s2), cudaErrorIllegalAddress);
    int lines = release_stderr(tmp, saved, "illegal address");
    CHECK_EQ(lines, 1);
    CHECK_EQ(cudaDeviceReset(), cudaSuccess);
    CHECK_EQ(cudaStreamQuery(s1), cudaErrorInvalidResourceHandle); /* reset destroyed it */
    cudaGetLastError(); /* buf went with the reset's context */
}

static void test_out_of_bounds_copy(void)
{
    void *p;
    FILE *tmp;
    unsigned char buf[2048];
    CHECK_EQ(cudaMalloc(&p, 1000), cudaSuccess);
    CHECK_EQ(cudaMemcpy(buf, p, 1000, cudaMemcpyDeviceToHost), cudaSuccess);
    int saved = capture_stderr(&tmp);
    CHECK_EQ(cudaMemcpy(buf, (char *)p + 512, 1024, cudaMemcpyDeviceToHost),
             cudaErrorIllegalAddress);
    int lines = release_stderr(tmp, saved, "out of bounds");
    CHECK_EQ(lines, 1);
    CHECK_EQ(cudaDeviceReset(), cudaSuccess);
    /* Reset freed everything: p is gone. */
    CHECK_EQ(cudaFree(p), cudaErrorInvalidValue);
    cudaGetLastError();
}

int main(void)
{
    sim_begin("simdevice cuda driver");
    test_memset_of_freed_memory();
    test_free_async_then_access_from_other_stream();
    test_out_of_bounds_copy();
    printf("cuda_fault: all passed\n");
    return 0;
}
