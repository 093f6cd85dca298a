/* A runtime that reaches one of the entry points the cache serves from inside one of the
 * cache's own calls must get the real function, even when the calling thread's lane would
 * serve that call. Run with SIMDEV_HIP_REENTRANT=2: the HIP stand-in's hipMalloc calls its own
 * exported hipMallocAsync on the null stream. The thread's lane is armed for that stream by
 * stream-ordered pairs of one segment's size; a plain allocation then grows the cache, and the
 * runtime's inner call of that growth arrives on the lane. Served by the cache, the new
 * "segment" would be memory the cache already holds (or the call would wait on the cache
 * itself): the plain block must lie apart from every block the cache handed out before. */
#include "gpu.h"

#define MiB ((size_t)1 << 20)
#define SEGMENT (2 * MiB) /* what the cache asks the runtime for, for a block of 1 MiB */

int main(void)
{
    char *p = NULL;
    for (int i = 0; i < 3; i++) {
        CHECK(gpuMallocAsync((void **)&p, SEGMENT, NULL));
        CHECK(gpuFreeAsync(p, NULL));
    }
    CHECK(gpuStreamSynchronize(NULL));
    char *q = NULL;
    CHECK(gpuMalloc((void **)&q, MiB));
    printf("stream-ordered block %p (%zu bytes), plain block %p\n", (void *)p, SEGMENT,
           (void *)q);
    EXPECT(q + MiB <= p || q >= p + SEGMENT);
    CHECK(gpuMemset(q, 0x5A, MiB));
    CHECK(gpuFree(q));
    CHECK(gpuDeviceSynchronize());
    return 0;
}
