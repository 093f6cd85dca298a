/* ptsz_plain_own.c's race, where only a library loaded later is built for per-thread default
 * streams: the main thread allocates and frees until its calls take the shim's lane
 * (docs/shim.md), then loads the library (argv[1]), whose thread A writes x on its own stream
 * behind a gate. The main thread frees x and allocates the same size, writing the new block on
 * its own per-thread stream, unordered with A's. The load must end the lane: the shim
 * scans the loaded objects again and stops taking the thread's frees back at once. Finding
 * such code synchronizes the device once (docs/arena.md), which waits for A's gate: a helper
 * thread opens it after a while, whether the main thread waits or not. */
#include <dlfcn.h>
#include <pthread.h>

#include "gpu.h"

#define SIZE (8u << 20)

static struct gpu_gate gate;

static void *open_later(void *unused)
{
    (void)unused;
    sleep_ms(300); /* the write to y runs meanwhile, unless something orders it after A's */
    gpu_gate_open(&gate);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *keep, *x, *y;
    CHECK(gpuMalloc(&keep, SIZE)); /* a working set that lets the cache grow, not wait */
    for (int i = 0; i < 4; i++) {
        CHECK(gpuMalloc(&x, SIZE));
        if (i < 3)
            CHECK(gpuFree(x));
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    int (*start)(void *, size_t, struct gpu_gate *);
    int (*join)(void);
    void *s = dlsym(h, "ptsz_lib_start"), *j = dlsym(h, "ptsz_lib_join");
    EXPECT(s != NULL && j != NULL);
    memcpy(&start, &s, sizeof start);
    memcpy(&join, &j, sizeof join);
    EXPECT(start(x, SIZE, &gate) == 0);
    pthread_t opener;
    EXPECT(pthread_create(&opener, NULL, open_later, NULL) == 0);
    CHECK(gpuFree(x));
    CHECK(gpuMalloc(&y, SIZE));
    CHECK(gpuMemsetAsync(y, 0x5E, SIZE, cudaStreamPerThread));
    CHECK(gpuStreamSynchronize(cudaStreamPerThread));
    EXPECT(pthread_join(opener, NULL) == 0);
    EXPECT(join() == 0);
    CHECK(gpuFree(keep));
    return race_verdict(y, x);
}
