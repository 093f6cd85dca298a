/* A thread that exits after a device reset elsewhere. Thread A frees two blocks on its
 * per-thread stream of device 0: the first free's event is pending when the second is freed,
 * so only A's exit (which hands its per-thread stream's pool to the device) lets the second be
 * reused by another thread. Meanwhile device 1 is reset. After A exited and its stream drained,
 * an allocation that needs the second block's memory must succeed: the reset of device 1 must
 * not make A's exit forget device 0. Run with two simulated devices of 64 MiB. */
#include <pthread.h>

#include "gpu.h"

#define BIG (40u << 20)

static struct gpu_gate gate;
static gpuEvent_t drained;
static volatile int a_freed, reset_done;

static void *thread_a(void *unused)
{
    (void)unused;
    CHECK(gpuSetDevice(0));
    void *p1, *p2;
    CHECK(gpuMallocAsync(&p1, 4096, gpuStreamPerThread));
    CHECK(gpuMallocAsync(&p2, BIG, gpuStreamPerThread));
    CHECK(gpu_host_gate(gpuStreamPerThread, &gate));
    CHECK(gpuFreeAsync(p1, gpuStreamPerThread)); /* its event waits behind the gate */
    CHECK(gpuMemsetAsync(p2, 0xA1, BIG, gpuStreamPerThread));
    CHECK(gpuFreeAsync(p2, gpuStreamPerThread)); /* no event of its own: one is pending */
    CHECK(gpuEventRecord(drained, gpuStreamPerThread));
    __atomic_store_n(&a_freed, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&reset_done, __ATOMIC_SEQ_CST))
        sleep_ms(1);
    return NULL; /* exits with its stream still stopped at the gate */
}

int main(void)
{
    CHECK(gpuSetDevice(1));
    CHECK(gpuFree(NULL));
    CHECK(gpuSetDevice(0));
    CHECK(gpuFree(NULL));
    gpuStream_t s;
    CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
    CHECK(gpuEventCreate(&drained));
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, thread_a, NULL) == 0);
    while (!__atomic_load_n(&a_freed, __ATOMIC_SEQ_CST))
        sleep_ms(1);
    CHECK(gpuSetDevice(1));
    CHECK(gpuDeviceReset());
    CHECK(gpuSetDevice(0));
    __atomic_store_n(&reset_done, 1, __ATOMIC_SEQ_CST);
    EXPECT(pthread_join(t, NULL) == 0);
    gpu_gate_open(&gate);
    CHECK(gpuEventSynchronize(drained));
    void *tmp, *q = NULL;
    CHECK(gpuMallocAsync(&tmp, 4096, s));
    gpuError_t e = gpuMallocAsync(&q, BIG, s); /* only fits in the exited thread's block */
    printf("after the exit of a thread: a %u MiB allocation on device 0 -> %d\n", BIG >> 20,
           (int)e);
    CHECK(gpuFreeAsync(tmp, s));
    if (e == gpuSuccess)
        CHECK(gpuFreeAsync(q, s));
    CHECK(gpuStreamSynchronize(s));
    return e == gpuSuccess ? 0 : 1;
}
