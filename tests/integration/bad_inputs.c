/* Bad inputs, printed as "call -> code, last error". Run with and without the shim on the
 * simulator: the two outputs must be identical. Needs two simulated devices. */
#include "gpu.h"

static void report(const char *what, gpuError_t e)
{
    gpuError_t last = gpuGetLastError();
    printf("%-28s -> %d, last error %d\n", what, (int)e, (int)last);
}

int main(void)
{
    void *p = (void *)0x1;
    report("malloc(NULL, 16)", gpuMalloc(NULL, 16));
    gpuError_t e = gpuMalloc(&p, 0);
    report("malloc(&p, 0)", e);
    printf("  p after size 0: %s\n", p == NULL ? "NULL" : "not NULL");
    report("free(NULL)", gpuFree(NULL));

    void *a;
    CHECK(gpuMalloc(&a, 4096));
    report("free(interior)", gpuFree((char *)a + 256));
    report("free(block)", gpuFree(a));
    report("free(block) again", gpuFree(a));
    int host_var;
    report("free(host pointer)", gpuFree(&host_var));

    /* A pointer of another device, freed while device 0 is current. */
    void *b;
    CHECK(gpuSetDevice(1));
    CHECK(gpuMalloc(&b, 4096));
    CHECK(gpuSetDevice(0));
    report("free(other device's block)", gpuFree(b));
    int dev = -1;
    CHECK(gpuGetDevice(&dev));
    printf("  current device after: %d\n", dev);

    gpuStream_t s;
    CHECK(gpuStreamCreate(&s));
    report("mallocAsync(NULL, 16, s)", gpuMallocAsync(NULL, 16, s));
    report("freeAsync(NULL, s)", gpuFreeAsync(NULL, s));
    void *c;
    CHECK(gpuMallocAsync(&c, 4096, s));
    report("freeAsync(interior, s)", gpuFreeAsync((char *)c + 8, s));
    report("freeAsync(block, s)", gpuFreeAsync(c, s));
    report("freeAsync(block, s) again", gpuFreeAsync(c, s));
    CHECK(gpuStreamSynchronize(s));
    CHECK(gpuStreamDestroy(s));
    return 0;
}
