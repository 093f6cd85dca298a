/* Three 64 MiB allocations and one free, pinned host memory of 3 MiB and 1 MiB and a free of
 * the second, then waits (until its standard input closes) so that cachealloc-top can look at
 * it from outside. */
#include <unistd.h>

#include "gpu.h"

int main(void)
{
    void *p[3];
    for (int i = 0; i < 3; i++)
        CHECK(gpuMalloc(&p[i], (size_t)64 << 20));
    CHECK(gpuFree(p[1]));
    void *h[2];
    CHECK(gpuMallocHost(&h[0], (size_t)3 << 20));
    CHECK(gpuMallocHost(&h[1], (size_t)1 << 20));
    CHECK(gpuFreeHost(h[1]));
    printf("ready\n");
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0)
        ;
    return 0;
}
