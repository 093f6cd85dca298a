/* A program built for per-thread default streams (every "stream 0" is the calling thread's
 * own) where thread A writes, on its stream, into a block the main thread allocated; the main
 * thread frees the block with the plain free and allocates the same size again. Thread A's
 * stream is not ordered with the main thread's: the new block must not be the old one before
 * A's write is done, although the main thread takes back its own frees when it alone uses its
 * stream (docs/arena.md, "Thread caches"). */
#include <pthread.h>

#include "gpu.h"

#define SIZE (8u << 20)

static struct gpu_gate gate;
static void *x_addr;
static volatile int a_queued;

static void *thread_a(void *unused)
{
    (void)unused;
    CHECK(gpu_host_gate(0, &gate));               /* A's own stream stops here... */
    CHECK(gpuMemsetAsync(x_addr, 0xA1, SIZE, 0)); /* ...then writes x */
    __atomic_store_n(&a_queued, 1, __ATOMIC_SEQ_CST);
    CHECK(gpuStreamSynchronize(0));
    return NULL;
}

int main(void)
{
    void *keep, *x, *y;
    CHECK(gpuMalloc(&keep, SIZE)); /* a working set that lets the cache grow, not wait */
    CHECK(gpuMalloc(&x, SIZE));
    x_addr = x;
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, thread_a, NULL) == 0);
    while (!__atomic_load_n(&a_queued, __ATOMIC_SEQ_CST))
        sleep_ms(1);
    CHECK(gpuFree(x));
    CHECK(gpuMalloc(&y, SIZE));
    CHECK(gpuMemsetAsync(y, 0x5E, SIZE, 0));
    sleep_ms(50); /* the write to y runs now, unless something orders it after A's stream */
    gpu_gate_open(&gate);
    CHECK(gpuStreamSynchronize(0));
    EXPECT(pthread_join(t, NULL) == 0);
    CHECK(gpuFree(keep));
    return race_verdict(y, x);
}
