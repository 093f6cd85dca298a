/* Allocations for the leak report and the timeline: three allocated in leaky_function, one
 * freed; the other two are never freed. Pinned host memory too: 5000 bytes never freed, 6000
 * freed. */
#include "gpu.h"

/* Not static, and the program is linked with -rdynamic: the report names it. */
__attribute__((noinline)) void *leaky_function(size_t size);

void *leaky_function(size_t size)
{
    void *p = NULL;
    CHECK(gpuMalloc(&p, size));
    return p;
}

int main(void)
{
    void *a = leaky_function(1111);
    void *b = leaky_function(2222);
    void *c = leaky_function(3333);
    (void)a;
    (void)c;
    CHECK(gpuFree(b));
    void *h = NULL, *g = NULL;
    CHECK(gpuMallocHost(&h, 5000));
    CHECK(gpuMallocHost(&g, 6000));
    CHECK(gpuFreeHost(g));
    CHECK(gpuDeviceSynchronize());
    return 0;
}
