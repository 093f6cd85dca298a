/* Another thread's per-thread default stream. Thread A frees two blocks on its per-thread
 * stream: the first free's event is still pending when the second block is freed, and work
 * queued on A's stream still writes the second block. Once the first event completed, the main
 * thread allocates on its own stream: it must not receive the second block before A's stream
 * has passed its free (the shim must not record the missing event on the main thread's own
 * per-thread stream, which is what the runtime's per-thread handle names there). */
#include <pthread.h>

#include "gpu.h"

#define BIG (64u << 20)

static struct gpu_gate before_first_free, after_first_free, finish;
static void *p2_addr;
static volatile int a_freed;

static void *thread_a(void *unused)
{
    (void)unused;
    void *p1, *p2;
    CHECK(gpuMallocAsync(&p1, 4096, gpuStreamPerThread));
    CHECK(gpuMallocAsync(&p2, BIG, gpuStreamPerThread));
    p2_addr = p2;
    CHECK(gpu_host_gate(gpuStreamPerThread, &before_first_free));
    CHECK(gpuFreeAsync(p1, gpuStreamPerThread));      /* its event waits behind the gate */
    CHECK(gpu_host_gate(gpuStreamPerThread, &after_first_free));
    CHECK(gpuMemsetAsync(p2, 0xA1, BIG, gpuStreamPerThread));
    CHECK(gpuFreeAsync(p2, gpuStreamPerThread));      /* no new event: one is pending */
    __atomic_store_n(&a_freed, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&finish.open, __ATOMIC_SEQ_CST))
        sleep_ms(1);
    CHECK(gpuStreamSynchronize(gpuStreamPerThread));
    return NULL;
}

int main(void)
{
    CHECK(gpuFree(NULL));
    gpuStream_t s;
    CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, thread_a, NULL) == 0);
    while (!__atomic_load_n(&a_freed, __ATOMIC_SEQ_CST))
        sleep_ms(1);
    /* A's first event completes; A's stream then stops before the write to p2. */
    gpu_gate_open(&before_first_free);
    EXPECT(gpu_gate_reached(&after_first_free));
    /* Small allocations poll the pools; the pauses let an event the shim might record on the
     * wrong stream complete before the big one. */
    void *tmp[10], *q;
    for (int i = 0; i < 10; i++) {
        CHECK(gpuMallocAsync(&tmp[i], 4096, s));
        sleep_ms(2);
    }
    CHECK(gpuMallocAsync(&q, BIG, s));
    CHECK(gpuMemsetAsync(q, 0x5E, BIG, s));
    CHECK(gpuStreamSynchronize(s));
    /* A's stream writes p2 now. */
    gpu_gate_open(&after_first_free);
    gpu_gate_open(&finish);
    EXPECT(pthread_join(t, NULL) == 0);
    unsigned char c = 0;
    CHECK(gpuMemcpy(&c, q, 1, gpuMemcpyDefault));
    printf("q %s p2; q[0] = 0x%02X (%s)\n", q == p2_addr ? "==" : "!=", c,
           c == 0x5E ? "ok" : "written by thread A's stream");
    for (int i = 0; i < 10; i++)
        CHECK(gpuFreeAsync(tmp[i], s));
    CHECK(gpuFreeAsync(q, s));
    CHECK(gpuStreamSynchronize(s));
    CHECK(gpuStreamDestroy(s));
    return c == 0x5E ? 0 : 1;
}
