/* Two simulated devices, four threads switching between them: every block lands on the
 * device current at its allocation, data survives, and frees from the other device work. */
#include <pthread.h>
#include <string.h>

#include "gpu.h"

#define ROUNDS 300

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    unsigned char buf[256];
    void *keep[2] = {NULL, NULL};
    for (int i = 0; i < ROUNDS; i++) {
        int dev = (i + id) & 1;
        CHECK(gpuSetDevice(dev));
        void *p;
        size_t n = (size_t)((i * 37 + id) % 64 + 1) * 1024;
        CHECK(gpuMalloc(&p, n));
        int v = (id * 31 + i) & 0xff;
        CHECK(gpuMemset(p, v, n));
        CHECK(gpuMemcpy(buf, p, sizeof buf, gpuMemcpyDefault));
        for (size_t k = 0; k < sizeof buf; k++)
            EXPECT(buf[k] == (unsigned char)v);
        int cur = -1;
        CHECK(gpuGetDevice(&cur));
        EXPECT(cur == dev);
        /* Free the block kept from the other device while this one is current. */
        if (keep[dev ^ 1] != NULL)
            CHECK(gpuFree(keep[dev ^ 1]));
        keep[dev ^ 1] = NULL;
        if (keep[dev] != NULL)
            CHECK(gpuFree(keep[dev]));
        keep[dev] = p;
        CHECK(gpuGetDevice(&cur));
        EXPECT(cur == dev); /* the shim never leaves another device current */
    }
    for (int d = 0; d < 2; d++)
        if (keep[d] != NULL)
            CHECK(gpuFree(keep[d]));
    return NULL;
}

int main(void)
{
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        EXPECT(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    struct simdev_counters c0 = sim_counters(0), c1 = sim_counters(1);
    printf("device 0: %llu mallocs, device 1: %llu mallocs\n",
           (unsigned long long)simdev_allocs(c0), (unsigned long long)simdev_allocs(c1));
    EXPECT(simdev_allocs(c0) > 0 && simdev_allocs(c1) > 0);
    EXPECT(c0.faults == 0 && c1.faults == 0);
    return 0;
}
