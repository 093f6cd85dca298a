/* Built for per-thread default streams and loaded by ptsz_dlopen_main.c once it already
 * allocates: thread A writes, on its own stream, into a block the main thread allocated. */
#include <pthread.h>

#include "gpu.h"

static struct gpu_gate *gate;
static void *x_addr;
static size_t x_size;
static volatile int a_queued;
static pthread_t a;

static void *thread_a(void *unused)
{
    (void)unused;
    CHECK(gpu_host_gate(0, gate));                  /* A's own stream stops here... */
    CHECK(gpuMemsetAsync(x_addr, 0xA1, x_size, 0)); /* ...then writes x */
    __atomic_store_n(&a_queued, 1, __ATOMIC_SEQ_CST);
    CHECK(gpuStreamSynchronize(0));
    return NULL;
}

/* Start thread A on x and return once its write is queued behind g; 0 on success. */
__attribute__((visibility("default"))) int ptsz_lib_start(void *x, size_t size, struct gpu_gate *g)
{
    x_addr = x;
    x_size = size;
    gate = g;
    if (pthread_create(&a, NULL, thread_a, NULL) != 0)
        return 1;
    while (!__atomic_load_n(&a_queued, __ATOMIC_SEQ_CST))
        sleep_ms(1);
    return 0;
}

/* Wait for thread A. */
__attribute__((visibility("default"))) int ptsz_lib_join(void)
{
    return pthread_join(a, NULL);
}
