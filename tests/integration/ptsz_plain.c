/* A program built for per-thread default streams (compiled with
 * CUDA_API_PER_THREAD_DEFAULT_STREAM: every "stream 0" below is the calling thread's own
 * stream) that uses only plain cudaMalloc/cudaFree from two host threads. Thread A's stream
 * still writes x after A freed it; the main thread's allocation must not receive x before A's
 * stream passed the free, although the shim was never told of any stream. */
#include <pthread.h>

#include "gpu.h"

#define BIG (64u << 20)

static struct gpu_gate gate;
static void *x_addr;
static volatile int a_freed;

static void *thread_a(void *unused)
{
    (void)unused;
    void *x;
    CHECK(gpuMalloc(&x, BIG));
    x_addr = x;
    CHECK(gpu_host_gate(0, &gate));              /* A's own stream stops here... */
    CHECK(gpuMemsetAsync(x, 0xA1, BIG, 0));      /* ...then writes x */
    CHECK(gpuFree(x));
    __atomic_store_n(&a_freed, 1, __ATOMIC_SEQ_CST);
    CHECK(gpuStreamSynchronize(0));
    return NULL;
}

int main(void)
{
    CHECK(gpuFree(NULL));
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, thread_a, NULL) == 0);
    while (!__atomic_load_n(&a_freed, __ATOMIC_SEQ_CST))
        sleep_ms(1);
    void *y;
    CHECK(gpuMalloc(&y, BIG));
    CHECK(gpuMemsetAsync(y, 0x5E, BIG, 0));
    sleep_ms(50); /* the write to y runs now, unless something orders it after A's stream */
    gpu_gate_open(&gate);
    CHECK(gpuStreamSynchronize(0));
    EXPECT(pthread_join(t, NULL) == 0);
    return race_verdict(y, x_addr);
}
