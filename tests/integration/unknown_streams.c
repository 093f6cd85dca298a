/* Stream handles the shim never saw, printed as "call -> code, last error". Run with and
 * without the shim on the simulator: the outputs must be identical. A destroyed or bogus handle
 * gets the runtime's own code; a block of the cache freed on such a handle stays allocated, as
 * with the runtime. */
#include "gpu.h"

static void report(const char *what, gpuError_t e)
{
    gpuError_t last = gpuGetLastError();
    printf("%-36s -> %d, last error %d\n", what, (int)e, (int)last);
}

int main(void)
{
    void *p = NULL;
    report("free(NULL)", gpuFree(NULL));
    gpuStream_t s;
    CHECK(gpuStreamCreate(&s));
    CHECK(gpuStreamDestroy(s));
    report("mallocAsync(&p, 4096, destroyed)", gpuMallocAsync(&p, 4096, s));
    gpuStream_t bogus = (gpuStream_t)(uintptr_t)0x12345640;
    report("mallocAsync(&p, 4096, bogus)", gpuMallocAsync(&p, 4096, bogus));
    void *q;
    CHECK(gpuMalloc(&q, 4096));
    report("freeAsync(q, destroyed)", gpuFreeAsync(q, s));
    report("freeAsync(q, bogus)", gpuFreeAsync(q, bogus));
    report("free(q)", gpuFree(q));
    /* Still unknown: nothing was registered by the failed calls. */
    report("mallocAsync(&p, 4096, destroyed) again", gpuMallocAsync(&p, 4096, s));
    gpuStream_t t;
    CHECK(gpuStreamCreate(&t));
    CHECK(gpuMallocAsync(&p, 4096, t));
    report("freeAsync(p, t)", gpuFreeAsync(p, t));
    CHECK(gpuStreamSynchronize(t));
    CHECK(gpuStreamDestroy(t));
    report("synchronize", gpuDeviceSynchronize());
    return 0;
}
