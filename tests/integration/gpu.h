/* One source, three APIs: test programs are written once against these names and compiled
 * against the real CUDA runtime headers, with -DGPU_HIP against the real HIP headers, or with
 * -DGPU_DRIVER against the CUDA driver API (gpu_driver.h). */
#ifndef CA_TEST_GPU_H
#define CA_TEST_GPU_H

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simdev.h"

#ifdef GPU_HIP
#include <hip/hip_runtime_api.h>
typedef hipError_t gpuError_t;
typedef hipStream_t gpuStream_t;
typedef hipEvent_t gpuEvent_t;
#define GPU_API "hip"
#define GPU_RT_LIB "libamdhip64.so.5"
#define GPU_SIM_LIB GPU_RT_LIB /* the HIP simulator stands in for the runtime */
#define gpuSuccess hipSuccess
#define gpuErrorOOM hipErrorOutOfMemory
#define gpuErrorIllegalAddress hipErrorIllegalAddress
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamPerThread hipStreamPerThread
#define gpuMemcpyDefault hipMemcpyDefault
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMallocAsync hipMallocAsync
#define gpuFreeAsync hipFreeAsync
#define gpuMemGetInfo hipMemGetInfo
#define gpuDeviceReset hipDeviceReset
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuStreamCreate hipStreamCreate
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuEventCreate hipEventCreate
#define gpuEventRecord hipEventRecord
#define gpuEventDestroy hipEventDestroy
#define gpuEventSynchronize hipEventSynchronize
#define gpuLaunchHostFunc hipLaunchHostFunc
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemset hipMemset
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpy hipMemcpy
#define gpuMallocHost(p, n) hipHostMalloc((p), (n), 0)
#define gpuFreeHost hipHostFree
#define gpuGetLastError hipGetLastError
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuDeviceEnablePeerAccess hipDeviceEnablePeerAccess
#define gpuDeviceDisablePeerAccess hipDeviceDisablePeerAccess
#elif defined(GPU_DRIVER)
#include "gpu_driver.h"
#else
#include <cuda_runtime_api.h>
typedef cudaError_t gpuError_t;
typedef cudaStream_t gpuStream_t;
typedef cudaEvent_t gpuEvent_t;
#define GPU_API "cuda"
#define GPU_RT_LIB "libcudart.so.13"
#define GPU_SIM_LIB "libcuda.so.1" /* the CUDA simulator stands in for the driver */
#define gpuSuccess cudaSuccess
#define gpuErrorOOM cudaErrorMemoryAllocation
#define gpuErrorIllegalAddress cudaErrorIllegalAddress
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamPerThread cudaStreamPerThread
#define gpuMemcpyDefault cudaMemcpyDefault
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMallocAsync cudaMallocAsync
#define gpuFreeAsync cudaFreeAsync
#define gpuMemGetInfo cudaMemGetInfo
#define gpuDeviceReset cudaDeviceReset
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuStreamCreate cudaStreamCreate
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuEventCreate cudaEventCreate
#define gpuEventRecord cudaEventRecord
#define gpuEventDestroy cudaEventDestroy
#define gpuEventSynchronize cudaEventSynchronize
#define gpuLaunchHostFunc cudaLaunchHostFunc
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemset cudaMemset
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpy cudaMemcpy
#define gpuMallocHost cudaMallocHost
#define gpuFreeHost cudaFreeHost
#define gpuGetLastError cudaGetLastError
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#define gpuDeviceDisablePeerAccess cudaDeviceDisablePeerAccess
#endif

/* Both runtimes record the last error of a failed call (the driver keeps none). */
#ifndef GPU_HAS_LAST_ERROR
#define GPU_HAS_LAST_ERROR 1
#endif

/* Abort the test with the failing call's text and code. */
#define CHECK(call)                                                                           \
    do {                                                                                      \
        gpuError_t e_ = (call);                                                               \
        if (e_ != gpuSuccess) {                                                               \
            fprintf(stderr, "%s:%d: %s returned %d\n", __FILE__, __LINE__, #call, (int)e_);   \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

#define EXPECT(cond)                                                                          \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);               \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

/* The simulator's counters of device dev (-1: totals), found in the simulated library wherever
 * it was loaded (RTLD_LOCAL included). Exits with 77 when not running on the simulator. */
static inline struct simdev_counters sim_counters(int dev)
{
    struct simdev_counters c = {0};
    /* The CUDA runtime loads the driver at its first call; loading it first changes nothing. */
    void *h = dlopen(GPU_SIM_LIB, RTLD_NOW);
    void *sym = h ? dlsym(h, "simdev_get_counters") : NULL;
    if (sym == NULL) {
        fprintf(stderr, "not running on the simulated device\n");
        exit(77);
    }
    simdev_get_counters_fn f;
    memcpy(&f, &sym, sizeof f);
    f(dev, &c);
    return c;
}

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The statistics directory the test names (CACHEALLOC_SHM_DIR), made before the cache starts:
 * a directory of the test's own, so that no other test's ladder asks this process for its
 * memory. It may exist already. */
static inline void gpu_own_stats_dir(void)
{
    const char *d = getenv("CACHEALLOC_SHM_DIR");
    if (d != NULL)
        mkdir(d, 0700);
}

/* The simulated device shared (SIMDEV_SHARED) by this process and the children it forks from
 * now on, under a name of its own (kind and pid: two runs never meet); *table is the shared
 * table's path, for the test to remove at its end. */
static inline void gpu_share_device(const char *kind, char *table, size_t len)
{
    char name[64];
    snprintf(name, sizeof name, "%s-%d", kind, (int)getpid());
    setenv("SIMDEV_SHARED", name, 1);
    snprintf(table, len, "/dev/shm/simdev.%u.%s", (unsigned)getuid(), name);
}

static inline void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

#ifdef GPU_HIP
static inline void host_sleep_cb(hipStream_t s, hipError_t status, void *arg)
{
    (void)s;
    (void)status;
    sleep_ms((long)(intptr_t)arg);
}
/* Queue a host function that sleeps ms milliseconds on stream s. */
#define gpu_host_sleep(s, ms) hipStreamAddCallback((s), host_sleep_cb, (void *)(intptr_t)(ms), 0)
#else
static inline void host_sleep_fn(void *arg)
{
    sleep_ms((long)(intptr_t)arg);
}
/* Queue a host function that sleeps ms milliseconds on stream s. */
#define gpu_host_sleep(s, ms) gpuLaunchHostFunc((s), host_sleep_fn, (void *)(intptr_t)(ms))
#endif

/* A flag a host function on a stream waits on: the test decides when the stream goes on. The
 * wait gives up after 10 s, so that a test whose expectation fails never hangs. */
struct gpu_gate {
    volatile int open, entered;
};

static inline void gpu_gate_wait(struct gpu_gate *g)
{
    __atomic_store_n(&g->entered, 1, __ATOMIC_SEQ_CST);
    for (int i = 0; i < 10000 && !__atomic_load_n(&g->open, __ATOMIC_SEQ_CST); i++)
        sleep_ms(1);
}

/* Open the gate: the stream waiting on it goes on. */
static inline void gpu_gate_open(struct gpu_gate *g)
{
    __atomic_store_n(&g->open, 1, __ATOMIC_SEQ_CST);
}

/* The race tests' verdict: y, written 0x5E by the program, must not have been overwritten by
 * another thread's late write (0xA1) to the block x it replaced. Frees y; 0 when it survived. */
static inline int race_verdict(void *y, const void *x)
{
    unsigned char c = 0;
    CHECK(gpuMemcpy(&c, y, 1, gpuMemcpyDefault));
    printf("y %s x; y[0] = 0x%02X (%s)\n", y == x ? "==" : "!=", c,
           c == 0x5E ? "ok" : "written by thread A's stream");
    CHECK(gpuFree(y));
    return c == 0x5E ? 0 : 1;
}

/* Wait (at most 10 s) until a stream reached the gate: everything queued before it is done. */
static inline int gpu_gate_reached(struct gpu_gate *g)
{
    for (int i = 0; i < 10000 && !__atomic_load_n(&g->entered, __ATOMIC_SEQ_CST); i++)
        sleep_ms(1);
    return __atomic_load_n(&g->entered, __ATOMIC_SEQ_CST);
}

#ifdef GPU_HIP
static inline void gate_cb(hipStream_t s, hipError_t status, void *arg)
{
    (void)s;
    (void)status;
    gpu_gate_wait(arg);
}
/* Queue a host function on stream s that waits on gate g. */
#define gpu_host_gate(s, g) hipStreamAddCallback((s), gate_cb, (g), 0)
#else
static inline void gate_fn(void *arg)
{
    gpu_gate_wait(arg);
}
/* Queue a host function on stream s that waits on gate g. */
#define gpu_host_gate(s, g) gpuLaunchHostFunc((s), gate_fn, (g))
#endif

#endif
