/* Real programs while the simulated driver fails: eight threads allocate and free (plain, and
 * stream-ordered on a private and the per-thread stream) while the driver refuses a fraction of
 * allocations, event creations and records and slows every synchronization (SIMDEV_FAIL_* in
 * the test's environment). Every call answers success or the runtime's own out-of-memory code,
 * no block is ever handed out twice (a shared interval set of live blocks), contents survive,
 * and at exit the cache's accounting is exact: what it reserves is what the driver holds. */
#include <pthread.h>

#include "cachealloc.h"
#include "gpu.h"

#define SLOTS 16
#define MAX_LIVE (8 * SLOTS)

static int ops = 1500;

/* The live blocks of every thread, to catch a block handed out twice. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { uintptr_t a, b; } live[MAX_LIVE];
static int nlive;

static void live_add(void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p, b = a + n;
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < nlive; i++)
        if (a < live[i].b && live[i].a < b) {
            fprintf(stderr, "block %p+%zu overlaps a live one: handed out twice\n", p, n);
            exit(1);
        }
    live[nlive].a = a;
    live[nlive++].b = b;
    pthread_mutex_unlock(&live_lock);
}

static void live_del(void *p)
{
    pthread_mutex_lock(&live_lock);
    for (int i = 0; i < nlive; i++)
        if (live[i].a == (uintptr_t)p) {
            live[i] = live[--nlive];
            break;
        }
    pthread_mutex_unlock(&live_lock);
}

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

struct slot {
    void *p;
    size_t n;
    int value, kind; /* 0 plain, 1 private stream, 2 per-thread stream */
};

static void check_block(const struct slot *sl, gpuStream_t on)
{
    unsigned char buf[256];
    size_t n = sl->n < sizeof buf ? sl->n : sizeof buf;
    CHECK(gpuMemcpyAsync(buf, (char *)sl->p + sl->n - n, n, gpuMemcpyDefault, on));
    CHECK(gpuStreamSynchronize(on));
    for (size_t k = 0; k < n; k++)
        EXPECT(buf[k] == (unsigned char)sl->value);
}

static void *worker(void *arg)
{
    uint64_t seed = 0x9E3779B97F4A7C15ULL * ((uint64_t)(intptr_t)arg + 1);
    gpuStream_t s;
    CHECK(gpuStreamCreateWithFlags(&s, gpuStreamNonBlocking));
    struct slot slots[SLOTS] = {{0}};
    long refused = 0;
    for (int i = 0; i < ops + SLOTS; i++) {
        struct slot *sl = &slots[i < ops ? next(&seed) % SLOTS : (uint64_t)(i - ops)];
        if (sl->p != NULL) {
            gpuStream_t on = sl->kind == 2 ? gpuStreamPerThread : sl->kind == 1 ? s : 0;
            check_block(sl, on);
            live_del(sl->p);
            CHECK(sl->kind == 0 ? gpuFree(sl->p) : gpuFreeAsync(sl->p, on));
            sl->p = NULL;
            continue;
        }
        if (i >= ops)
            continue;
        uint64_t r = next(&seed);
        sl->n = (size_t)(r >> 8) % (r % 4 == 0 ? (8u << 20) : 65536u) + 1;
        sl->value = (int)(r >> 40) & 0xff;
        sl->kind = (int)(r >> 50) % 3;
        gpuStream_t on = sl->kind == 2 ? gpuStreamPerThread : sl->kind == 1 ? s : 0;
        gpuError_t e = sl->kind == 0 ? gpuMalloc(&sl->p, sl->n) : gpuMallocAsync(&sl->p, sl->n, on);
        if (e != gpuSuccess) {
            if (e != gpuErrorOOM) {
                fprintf(stderr, "allocation answered %d, neither success nor out-of-memory\n",
                        (int)e);
                exit(1);
            }
            sl->p = NULL;
            refused++;
            continue;
        }
        live_add(sl->p, sl->n);
        CHECK(gpuMemsetAsync(sl->p, sl->value, sl->n, on));
    }
    CHECK(gpuStreamSynchronize(s));
    CHECK(gpuStreamDestroy(s));
    return (void *)(intptr_t)refused;
}

int main(void)
{
    if (getenv("CA_FAULT_OPS"))
        ops = atoi(getenv("CA_FAULT_OPS"));
    pthread_t t[8];
    long refused = 0;
    for (int i = 0; i < 8; i++)
        EXPECT(pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i) == 0);
    for (int i = 0; i < 8; i++) {
        void *r;
        pthread_join(t[i], &r);
        refused += (long)(intptr_t)r;
    }
    CHECK(gpuDeviceSynchronize());
    (void)gpuGetLastError();
    struct simdev_counters c = sim_counters(0);
    cachealloc_stats st;
    int shim = cachealloc_get_stats(0, &st);
    printf("%d operations per thread, %ld refused; injected faults %llu; driver holds %llu B, "
           "cache reserves %llu B (allocated %llu)\n", ops, refused,
           (unsigned long long)c.injected_faults, (unsigned long long)c.reserved_bytes,
           shim ? (unsigned long long)st.reserved_bytes : 0ULL,
           shim ? (unsigned long long)st.allocated_bytes : 0ULL);
    EXPECT(c.injected_faults > 0);
    EXPECT(nlive == 0);
    if (shim) {
        EXPECT(st.allocated_bytes == 0);
        EXPECT(st.reserved_bytes == c.reserved_bytes);
    }
    EXPECT(c.faults == 0);
    return 0;
}
