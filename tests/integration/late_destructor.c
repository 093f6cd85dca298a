/* A thread's own destructor that allocates after the thread's cache went away. The thread runs
 * stream-ordered pairs on a stream of main's (its lane then holds its thread cache), then sets
 * a key whose destructor runs in the second round of destructors, after the cache's own: its
 * pairs must not reach the cache that was freed. The ASan build is where this test bites: it
 * reports the use after free. Elsewhere the allocator's own bookkeeping in the freed memory
 * usually makes those calls miss, and the counts below only catch a block lost with it.
 * On the simulated driver every pair is the cache's; on NVIDIA's driver some reach the driver
 * itself (a thread whose first runtime call is on another thread's stream has no current
 * context there, and in the second round of destructors the driver's own thread state is
 * gone): there the counts must only balance. */
#include <pthread.h>

#include "cachealloc.h"
#include "gpu.h"

#define MiB (1u << 20)
#define PAIRS 50

static gpuStream_t stream;
static pthread_key_t late_key;

static void pairs(void)
{
    for (int i = 0; i < PAIRS; i++) {
        void *p = NULL;
        CHECK(gpuMallocAsync(&p, MiB, stream));
        CHECK(gpuFreeAsync(p, stream));
    }
}

/* First round: ask for a second one, after every other key's destructor ran once. */
static void late(void *round)
{
    if ((uintptr_t)round == 1) {
        pthread_setspecific(late_key, (void *)2);
        return;
    }
    pairs();
}

static void *worker(void *unused)
{
    (void)unused;
    pairs();
    EXPECT(pthread_setspecific(late_key, (void *)1) == 0);
    return NULL;
}

int main(void)
{
    CHECK(gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking));
    /* Made after the shim's keys (the first allocation makes them): its destructor runs
     * after theirs in each round. */
    void *p = NULL;
    CHECK(gpuMallocAsync(&p, MiB, stream));
    CHECK(gpuFreeAsync(p, stream));
    EXPECT(pthread_key_create(&late_key, late) == 0);
    pthread_t t;
    EXPECT(pthread_create(&t, NULL, worker, NULL) == 0);
    EXPECT(pthread_join(t, NULL) == 0);
    CHECK(gpuStreamSynchronize(stream));
    cachealloc_stats st;
    EXPECT(cachealloc_get_stats(0, &st) == 1);
    printf("after the late destructor: %llu allocations, %llu frees, %llu bytes allocated\n",
           (unsigned long long)st.alloc_calls, (unsigned long long)st.free_calls,
           (unsigned long long)st.allocated_bytes);
    if (simdev_sym("simdev_get_counters") != NULL)
        EXPECT(st.alloc_calls == 1 + 2 * PAIRS);
    EXPECT(st.alloc_calls >= 1 && st.free_calls == st.alloc_calls);
    EXPECT(st.allocated_bytes == 0);
    return 0;
}
