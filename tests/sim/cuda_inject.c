/* cuda_inject.c: the simulator's injected failures as a program sees them through NVIDIA's
 * runtime (linked against the real libcudart.so.13): ordinary runtime errors, never crashes,
 * each counted. The first argument names the case; meson runs each with its own SIMDEV_*
 * settings (the same as hip_faults):
 *   nth     SIMDEV_FAIL_ALLOC_NTH=3
 *   rate    SIMDEV_FAIL_ALLOC_RATE=0.5 SIMDEV_FAIL_SEED=7
 *   events  SIMDEV_FAIL_EVENT_CREATE_RATE=0.3 SIMDEV_FAIL_EVENT_RECORD_RATE=0.3
 *   sync    SIMDEV_SYNC_DELAY_US=2000 */
#include <cuda_runtime_api.h>
#include <time.h>

#include "check.h"

enum { ROUNDS = 200 };

static void nth(void)
{
    void *p[6];
    void *none = &none;
    CHECK_EQ(cudaMalloc(&p[0], 0), cudaSuccess); /* never reaches the allocator */
    for (int i = 0; i < 6; i++) {
        struct simdev_counters want = sim_counters(0);
        p[i] = none;
        cudaError_t rc = cudaMalloc(&p[i], 1000);
        if (i != 2) {
            CHECK_EQ(rc, cudaSuccess);
            continue;
        }
        CHECK_EQ(rc, cudaErrorMemoryAllocation);
        CHECK(p[i] == none);
        CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
        CHECK_EQ(cudaGetLastError(), cudaSuccess);
        /* The refusal changed nothing but its two counters. */
        want.oom++;
        want.injected_faults++;
        struct simdev_counters got = sim_counters(0);
        CHECK(memcmp(&got, &want, sizeof got) == 0);
    }
    void *a;
    CHECK_EQ(cudaMallocAsync(&a, 1000, 0), cudaSuccess);
    CHECK_EQ(cudaFreeAsync(a, 0), cudaSuccess);
    for (int i = 0; i < 6; i++)
        if (i != 2)
            CHECK_EQ(cudaFree(p[i]), cudaSuccess);
    CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
    check_injected(5, 1, 1);
}

/* ROUNDS allocations of one kind; each succeeds (and is freed) or is refused as out of
 * memory, which is also the last error. Returns the number refused. */
static int alloc_rounds(cudaStream_t s, int async)
{
    int fails = 0;
    for (int i = 0; i < ROUNDS; i++) {
        void *p = NULL;
        cudaError_t rc = async ? cudaMallocAsync(&p, 4096, s) : cudaMalloc(&p, 4096);
        if (rc == cudaErrorMemoryAllocation) {
            CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
            fails++;
            continue;
        }
        CHECK_EQ(rc, cudaSuccess);
        CHECK_EQ(async ? cudaFreeAsync(p, s) : cudaFree(p), cudaSuccess);
    }
    return fails;
}

static void rate(void)
{
    cudaStream_t s;
    CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
    int fails = alloc_rounds(s, 0), async_fails = alloc_rounds(s, 1);
    /* p = 0.5 over 200 draws: outside [50, 150] is over 7 standard deviations away. */
    CHECK(fails >= 50 && fails <= 150);
    CHECK(async_fails >= 50 && async_fails <= 150);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
    check_injected(ROUNDS - fails, ROUNDS - async_fails, fails + async_fails);
}

static void gate_fn(void *g) { gate_wait(g); }

static void events(void)
{
    enum { N = 100, RECORDS = 3 };
    static cudaEvent_t ev[N];
    static int recorded[N];
    static struct gate g;
    cudaStream_t s;
    CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
    int created = 0, create_fails = 0, record_fails = 0;
    for (int i = 0; i < N; i++) {
        cudaError_t rc = cudaEventCreate(&ev[created]);
        CHECK(rc == cudaSuccess || rc == cudaErrorMemoryAllocation);
        if (rc == cudaSuccess)
            created++;
        else
            create_fails++;
    }
    CHECK(create_fails > 0 && create_fails < N);
    /* The stream is held: an event with a record is pending, one whose every record was
     * refused has none and is complete. */
    CHECK_EQ(cudaLaunchHostFunc(s, gate_fn, &g), cudaSuccess);
    for (int i = 0; i < created; i++)
        for (int k = 0; k < RECORDS; k++) {
            cudaError_t rc = cudaEventRecord(ev[i], s);
            CHECK(rc == cudaSuccess || rc == cudaErrorMemoryAllocation);
            if (rc == cudaSuccess)
                recorded[i] = 1;
            else
                record_fails++;
        }
    CHECK(record_fails > 0 && record_fails < created * RECORDS);
    for (int i = 0; i < created; i++)
        CHECK_EQ(cudaEventQuery(ev[i]), recorded[i] ? cudaErrorNotReady : cudaSuccess);
    /* Not sticky: the last error once, then gone. */
    CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
    CHECK_EQ(cudaGetLastError(), cudaSuccess);
    gate_open(&g);
    CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    for (int i = 0; i < created; i++) {
        CHECK_EQ(cudaEventSynchronize(ev[i]), cudaSuccess);
        CHECK_EQ(cudaEventDestroy(ev[i]), cudaSuccess);
    }
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.injected_faults, create_fails + record_fails);
    CHECK_EQ(c.oom, 0);
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

/* Starts timing a call that waits for the device. */
#define TIMED(call) (clock_gettime(CLOCK_MONOTONIC, &t0), (call))

/* Every wait for the device takes at least the delay; no result changes. */
static void sync_delay(void)
{
    enum { N = 8192 };
    static unsigned char h[N], back[N];
    struct timespec t0;
    cudaStream_t s;
    cudaEvent_t e;
    void *d;
    for (int i = 0; i < N; i++)
        h[i] = (unsigned char)(i * 7);
    CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
    CHECK_EQ(cudaEventCreate(&e), cudaSuccess);
    CHECK_EQ(cudaMalloc(&d, N), cudaSuccess);
    CHECK_EQ(cudaMemcpyAsync(d, h, N, cudaMemcpyHostToDevice, s), cudaSuccess);
    CHECK_EQ(cudaMemcpyAsync(back, d, N, cudaMemcpyDeviceToHost, s), cudaSuccess);
    CHECK_EQ(cudaEventRecord(e, s), cudaSuccess);
    CHECK_EQ(TIMED(cudaEventSynchronize(e)), cudaSuccess);
    CHECK(ms_since(&t0) >= 2.0);
    CHECK(memcmp(h, back, N) == 0);
    CHECK_EQ(TIMED(cudaStreamSynchronize(s)), cudaSuccess);
    CHECK(ms_since(&t0) >= 2.0);
    CHECK_EQ(TIMED(cudaDeviceSynchronize()), cudaSuccess);
    CHECK(ms_since(&t0) >= 2.0);
    CHECK_EQ(TIMED(cudaFree(d)), cudaSuccess);
    CHECK(ms_since(&t0) >= 2.0);
    CHECK_EQ(cudaEventDestroy(e), cudaSuccess);
    CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.injected_faults, 0);
    CHECK_EQ(c.reserved_bytes, 0);
}

int main(int argc, char **argv)
{
    sim_begin("simdevice cuda driver");
    static const struct sim_case cases[] = {
        {"nth", nth}, {"rate", rate}, {"events", events}, {"sync", sync_delay},
    };
    return sim_run_case("cuda_inject", argc, argv, cases, sizeof cases / sizeof cases[0]);
}
