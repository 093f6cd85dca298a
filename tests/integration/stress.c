/* Eight threads, random allocations and frees (plain and stream-ordered, on the legacy, the
 * per-thread and a private stream), contents checked with memset patterns and copies.
 * CA_STRESS_OPS sets the operations per thread (default 2000; the suite runs 12,500 and, for
 * CUDA in the plain build, 100,000). The long run sets more:
 *   CA_STRESS_MAX_SIZE  largest block (default 4 MiB), sizes then spread log-uniformly;
 *   CA_STRESS_STREAMS   N: every thread uses N shared non-blocking streams instead of its own;
 *   CA_STRESS_TOUCH     bytes set and checked at each end of a block (default: all of it),
 *                       so that huge blocks cost no host memory in the simulator. */
#include <pthread.h>
#include <string.h>

#include "gpu.h"

#define SLOTS 32

struct slot {
    void *p;
    size_t n;
    int value;
    int async; /* 0 plain, 1 async on the private stream, 2 async on the per-thread stream */
    gpuStream_t on; /* the stream that set it (plain blocks: the legacy stream) */
};

static int ops = 2000;
static size_t max_size;      /* 0: the suite's mix of small and up to 4 MiB blocks */
static size_t touch;         /* 0: whole blocks */
static int nshared;
static gpuStream_t shared[16];

/* The part of a block that is set and checked: all of it, or touch bytes at each end. */
static void set_block(void *p, size_t n, int value, gpuStream_t on)
{
    if (touch == 0 || n <= 2 * touch) {
        CHECK(gpuMemsetAsync(p, value, n, on));
        return;
    }
    CHECK(gpuMemsetAsync(p, value, touch, on));
    CHECK(gpuMemsetAsync((char *)p + n - touch, value, touch, on));
}

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void verify(const struct slot *sl)
{
    unsigned char buf[512];
    size_t n = sl->n < sizeof buf ? sl->n : sizeof buf;
    gpuStream_t on = sl->on;
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

static void release(struct slot *sl)
{
    if (sl->async == 0)
        CHECK(gpuFree(sl->p));
    else
        CHECK(gpuFreeAsync(sl->p, sl->on));
    sl->p = NULL;
}

static void *worker(void *arg)
{
    uint64_t seed = 0x9E3779B97F4A7C15ULL * ((uint64_t)(intptr_t)arg + 1);
    gpuStream_t s;
    if (nshared == 0)
        CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
    struct slot slots[SLOTS] = {{0}};
    for (int i = 0; i < ops; i++) {
        struct slot *sl = &slots[next(&seed) % SLOTS];
        if (nshared > 0)
            s = shared[next(&seed) % (uint64_t)nshared];
        if (sl->p != NULL) {
            verify(sl);
            release(sl);
            continue;
        }
        uint64_t r = next(&seed);
        if (max_size) {
            /* Log-uniform: as many blocks of 1 B..1 KiB as of 1..256 MiB. */
            unsigned bits = 64 - (unsigned)__builtin_clzll(max_size);
            sl->n = (size_t)(r >> 8) % ((size_t)1 << (1 + (r >> 3) % bits)) + 1;
            if (sl->n > max_size)
                sl->n = max_size;
        } else {
            sl->n = (r % 4 == 0) ? (size_t)(r >> 8) % (4u << 20) + 1 : (size_t)(r >> 8) % 16384 + 1;
        }
        sl->value = (int)(r >> 40) & 0xff;
        sl->async = (int)(r >> 50) % 3;
        gpuStream_t on = sl->async == 2 ? gpuStreamPerThread : s;
        sl->on = sl->async == 0 ? 0 : on;
        if (sl->async == 0) {
            CHECK(gpuMalloc(&sl->p, sl->n));
            set_block(sl->p, sl->n, sl->value, 0);
        } else {
            CHECK(gpuMallocAsync(&sl->p, sl->n, on));
            set_block(sl->p, sl->n, sl->value, on);
        }
    }
    for (int k = 0; k < SLOTS; k++)
        if (slots[k].p != NULL) {
            verify(&slots[k]);
            release(&slots[k]);
        }
    if (nshared == 0) {
        CHECK(gpuStreamSynchronize(s));
        CHECK(gpuStreamDestroy(s));
    }
    return NULL;
}

int main(void)
{
    if (getenv("CA_STRESS_OPS"))
        ops = atoi(getenv("CA_STRESS_OPS"));
    if (getenv("CA_STRESS_MAX_SIZE"))
        max_size = (size_t)strtoull(getenv("CA_STRESS_MAX_SIZE"), NULL, 0);
    if (getenv("CA_STRESS_TOUCH"))
        touch = (size_t)strtoull(getenv("CA_STRESS_TOUCH"), NULL, 0);
    if (getenv("CA_STRESS_STREAMS"))
        nshared = atoi(getenv("CA_STRESS_STREAMS"));
    if (nshared < 0 || nshared > 16)
        nshared = 16;
    for (int i = 0; i < nshared; i++)
        CHECK(gpuStreamCreateWithFlags(&shared[i], gpuStreamNonBlocking));
    pthread_t t[8];
    for (int i = 0; i < 8; i++)
        EXPECT(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    CHECK(gpuDeviceSynchronize());
    for (int i = 0; i < nshared; i++)
        CHECK(gpuStreamDestroy(shared[i]));
    struct simdev_counters c = sim_counters(-1);
    printf("%d operations per thread; driver mallocs %llu, faults %llu\n", ops,
           (unsigned long long)c.malloc_calls, (unsigned long long)c.faults);
    EXPECT(c.faults == 0);
    return 0;
}
