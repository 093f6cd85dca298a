/* HIP records "not ready" from a query as the thread's last error. The cache's own event
 * queries (it polls the fences of plain frees while a stream still runs) must not leave it for
 * the program's next hipGetLastError, nor replace an error the program has not read yet. */
#include "gpu.h"

#define SIZE (1u << 20)

int main(void)
{
    gpuStream_t s;
    struct gpu_gate gate = {0};
    CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking)); /* plain frees wait for fences */
    void *a, *b, *c;
    CHECK(gpuMalloc(&a, SIZE));
    CHECK(gpu_host_gate(s, &gate));
    CHECK(gpuMemsetAsync(a, 1, SIZE, s));
    CHECK(gpuFree(a));
    CHECK(gpuMalloc(&b, SIZE)); /* the cache records a fence and finds it not ready */
    gpuError_t e = gpuGetLastError();
    printf("last error after the cache's queries: %d\n", (int)e);
    EXPECT(e == gpuSuccess);
    EXPECT(gpuMalloc(NULL, 16) != gpuSuccess); /* an error the program has not read yet */
    CHECK(gpuFree(b));
    CHECK(gpuMalloc(&c, SIZE));
    e = gpuGetLastError();
    printf("the program's own error after more queries: %d\n", (int)e);
    EXPECT(e != gpuSuccess && e != hipErrorNotReady);
    gpu_gate_open(&gate);
    CHECK(gpuStreamSynchronize(s));
    CHECK(gpuFree(c));
    CHECK(gpuStreamDestroy(s));
    return 0;
}
