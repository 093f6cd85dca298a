/* Eight threads, random allocations and frees (plain and stream-ordered, on the legacy, the
 * per-thread and a private stream), contents checked with memset patterns and copies.
 * CA_STRESS_OPS sets the operations per thread (default 2000; the suite runs 12,500 and, for
 * CUDA in the plain build, 100,000). */
#include <pthread.h>
#include <string.h>

#include "gpu.h"

#define SLOTS 32

struct slot {
    void *p;
    size_t n;
    int value;
    int async; /* 0 plain, 1 async on the private stream, 2 async on the per-thread stream */
};

static int ops = 2000;

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void verify(const struct slot *sl, gpuStream_t s)
{
    unsigned char buf[512];
    size_t n = sl->n < sizeof buf ? sl->n : sizeof buf;
    /* The stream that set the block: plain blocks were set on the legacy stream. */
    gpuStream_t on = sl->async == 2 ? gpuStreamPerThread : sl->async == 1 ? s : 0;
    /* Head and tail of the block. */
    CHECK(gpuMemcpyAsync(buf, sl->p, n, gpuMemcpyDefault, on));
    CHECK(gpuStreamSynchronize(on));
    for (size_t k = 0; k < n; k++)
        EXPECT(buf[k] == (unsigned char)sl->value);
    CHECK(gpuMemcpyAsync(buf, (char *)sl->p + sl->n - n, n, gpuMemcpyDefault, on));
    CHECK(gpuStreamSynchronize(on));
    for (size_t k = 0; k < n; k++)
        EXPECT(buf[k] == (unsigned char)sl->value);
}

static void release(struct slot *sl, gpuStream_t s)
{
    if (sl->async == 0)
        CHECK(gpuFree(sl->p));
    else
        CHECK(gpuFreeAsync(sl->p, sl->async == 2 ? gpuStreamPerThread : s));
    sl->p = NULL;
}

static void *worker(void *arg)
{
    uint64_t seed = 0x9E3779B97F4A7C15ULL * ((uint64_t)(intptr_t)arg + 1);
    gpuStream_t s;
    CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
    struct slot slots[SLOTS] = {{0}};
    for (int i = 0; i < ops; i++) {
        struct slot *sl = &slots[next(&seed) % SLOTS];
        if (sl->p != NULL) {
            verify(sl, s);
            release(sl, s);
            continue;
        }
        uint64_t r = next(&seed);
        sl->n = (r % 4 == 0) ? (size_t)(r >> 8) % (4u << 20) + 1 : (size_t)(r >> 8) % 16384 + 1;
        sl->value = (int)(r >> 40) & 0xff;
        sl->async = (int)(r >> 50) % 3;
        gpuStream_t on = sl->async == 2 ? gpuStreamPerThread : s;
        if (sl->async == 0) {
            CHECK(gpuMalloc(&sl->p, sl->n));
            CHECK(gpuMemset(sl->p, sl->value, sl->n));
        } else {
            CHECK(gpuMallocAsync(&sl->p, sl->n, on));
            CHECK(gpuMemsetAsync(sl->p, sl->value, sl->n, on));
        }
    }
    for (int k = 0; k < SLOTS; k++)
        if (slots[k].p != NULL) {
            verify(&slots[k], s);
            release(&slots[k], s);
        }
    CHECK(gpuStreamSynchronize(s));
    CHECK(gpuStreamDestroy(s));
    return NULL;
}

int main(void)
{
    if (getenv("CA_STRESS_OPS"))
        ops = atoi(getenv("CA_STRESS_OPS"));
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        EXPECT(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    CHECK(gpuDeviceSynchronize());
    struct simdev_counters c = sim_counters(-1);
    printf("%d operations per thread; driver mallocs %llu, faults %llu\n", ops,
           (unsigned long long)c.malloc_calls, (unsigned long long)c.faults);
    EXPECT(c.faults == 0);
    return 0;
}
