/* cudaMemGetInfo under CACHEALLOC_LIMIT: free memory is what the program's next allocation can
 * get, what the cache holds free in one piece or the room under the limit once it gave back
 * what it can, never more than the device's free memory. argv[1]: the limit in MiB the
 * environment sets (as bytes or as a percentage). */
#include "gpu.h"

#define MiB ((size_t)1 << 20)

int main(int argc, char **argv)
{
    EXPECT(argc > 1);
    size_t limit = (size_t)atol(argv[1]) * MiB;
    size_t f = 0, t = 0;
    CHECK(gpuMemGetInfo(&f, &t));
    printf("free %zu MiB of %zu MiB (limit %zu MiB)\n", f / MiB, t / MiB, limit / MiB);
    EXPECT(f <= limit);
    EXPECT(f > limit / 2);
    /* Half of what is reported free can be allocated. */
    void *a;
    CHECK(gpuMalloc(&a, f / 2));
    size_t f2 = 0;
    CHECK(gpuMemGetInfo(&f2, &t));
    printf("after %zu MiB: free %zu MiB\n", f / 2 / MiB, f2 / MiB);
    EXPECT(f2 <= f - f / 2);
    void *b;
    CHECK(gpuMalloc(&b, f2 / 2));
    /* Freed blocks are cached: free memory again, inside the limit. */
    CHECK(gpuFree(b));
    CHECK(gpuFree(a));
    size_t f3 = 0;
    CHECK(gpuMemGetInfo(&f3, &t));
    printf("after freeing: free %zu MiB\n", f3 / MiB);
    EXPECT(f3 <= limit);
    EXPECT(f3 >= f - MiB);
    return 0;
}
