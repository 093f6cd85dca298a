/* The per-thread stream race with the plain API and the explicit per-thread handle (ordinary
 * entry points, no _ptsz import, no stream ever created). Thread A queues a write of x on its
 * per-thread stream behind a gate and frees x with the plain free; thread B then allocates the
 * same size and writes its block on its own per-thread stream. Per-thread streams of two
 * threads are not ordered with each other, so B must not get x before A's stream has passed
 * its write: B's data must survive A's late write. */
#include <pthread.h>

#include "gpu.h"

#define SIZE (8u << 20)

static struct gpu_gate gate;
static void *x_addr;
static volatile int a_freed;

static void *thread_a(void *unused)
{
    (void)unused;
    void *x;
    CHECK(gpuMalloc(&x, SIZE));
    x_addr = x;
    CHECK(gpu_host_gate(gpuStreamPerThread, &gate));
    CHECK(gpuMemsetAsync(x, 0xA1, SIZE, gpuStreamPerThread)); /* runs once the gate opens */
    CHECK(gpuFree(x));
    __atomic_store_n(&a_freed, 1, __ATOMIC_SEQ_CST);
    CHECK(gpuStreamSynchronize(gpuStreamPerThread));
    return NULL;
}

static void *thread_b(void *arg)
{
    void **out = arg;
    void *y;
    CHECK(gpuMalloc(&y, SIZE));
    CHECK(gpuMemsetAsync(y, 0x5E, SIZE, gpuStreamPerThread));
    CHECK(gpuStreamSynchronize(gpuStreamPerThread));
    *out = y;
    return NULL;
}

int main(void)
{
    CHECK(gpuFree(NULL));
    pthread_t a, b;
    void *y = NULL;
    EXPECT(pthread_create(&a, NULL, thread_a, NULL) == 0);
    while (!__atomic_load_n(&a_freed, __ATOMIC_SEQ_CST))
        sleep_ms(1);
    /* B allocates and writes while A's write of x still waits behind the gate; the cache may
     * make B wait for A's stream, so the gate opens after a while from here. */
    EXPECT(pthread_create(&b, NULL, thread_b, &y) == 0);
    sleep_ms(200);
    gpu_gate_open(&gate);
    EXPECT(pthread_join(b, NULL) == 0);
    EXPECT(pthread_join(a, NULL) == 0);
    return race_verdict(y, x_addr);
}
