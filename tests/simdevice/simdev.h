/* simdev.h: the simulated device's own extras, for test programs.
 * Programs link against the real runtime, so they reach these with simdev_sym() below. */
#ifndef SIMDEV_H
#define SIMDEV_H

#include <dlfcn.h>
#include <stdint.h>

/* Counters of one device (or totals), as written to SIMDEV_COUNTERS_FILE. */
struct simdev_counters {
    uint64_t malloc_calls;        /* successful cudaMalloc/hipMalloc */
    uint64_t malloc_bytes;        /* bytes requested by them */
    uint64_t free_calls;          /* successful cudaFree/hipFree of a live allocation */
    uint64_t free_bytes;
    uint64_t malloc_async_calls;  /* successful stream-ordered allocations */
    uint64_t free_async_calls;    /* successful stream-ordered frees */
    uint64_t device_syncs;        /* explicit ones and those inside cudaFree */
    uint64_t faults;              /* illegal-address faults */
    uint64_t invalid_frees;       /* frees of pointers that are not a live allocation */
    uint64_t reserved_bytes;      /* device memory held now (512-byte rounded) */
    uint64_t peak_reserved_bytes;
    uint64_t oom;                 /* allocations refused for lack of memory */
    uint64_t events_recorded;
    uint64_t stream_waits;        /* cudaStreamWaitEvent calls */
    uint64_t injected_faults;     /* calls failed on purpose by SIMDEV_FAIL_* */
    uint64_t vmm_creates;         /* successful cuMemCreate/hipMemCreate on this device */
    uint64_t vmm_releases;        /* successful cuMemRelease/hipMemRelease of its handles */
    uint64_t maps;                /* mappings of its handles made by cuMemMap/hipMemMap */
    uint64_t unmaps;              /* mappings of its handles removed by cuMemUnmap/hipMemUnmap */
    uint64_t vmm_exports;         /* successful cuMemExportToShareableHandle of its handles */
    uint64_t vmm_imports;         /* successful cuMemImportFromShareableHandle of its memory */
    uint64_t host_allocs;         /* successful pinned host allocations (cuMemHostAlloc,
                                   * cuMemAllocHost, hipHostMalloc) made with it current */
    uint64_t host_frees;          /* successful frees of them (cuMemFreeHost, hipHostFree) */
    uint64_t host_bytes;          /* pinned host bytes held now, as requested */
};

/* Driver allocations of both kinds in c: cuMemAlloc/hipMalloc (and, under a caching
 * allocator, its plain segments) and cuMemCreate/hipMemCreate (growths of mapped memory). */
static inline uint64_t simdev_allocs(struct simdev_counters c)
{
    return c.malloc_calls + c.vmm_creates;
}

/* Frees likewise: cuMemFree/hipFree, and the mappings cuMemUnmap/hipMemUnmap removed. */
static inline uint64_t simdev_frees(struct simdev_counters c)
{
    return c.free_calls + c.unmaps;
}

/* SIMDEV_SHARED=<name>: the table the processes sharing a device meet in,
 * /dev/shm/simdev.<uid>.<name> (tests/simdevice/core/sd_share.c): SIMDEV_SHARED_SLOTS slots,
 * one a process (pid 0: a free slot), each with the bytes the process uses on each device. A
 * test may read it (atomically, field by field) to know what the device has free right now. */
#define SIMDEV_SHARED_SLOTS 64
#define SIMDEV_MAX_DEVICES 64
struct simdev_shared_slot {
    int64_t pid;      /* 0: free */
    uint64_t start;   /* when the process started: a later process with its pid differs */
    uint64_t used[SIMDEV_MAX_DEVICES];
};

typedef int (*simdev_get_counters_fn)(int device, struct simdev_counters *out);
typedef const char *(*simdev_identify_fn)(void);
/* simdev_get_price("SIMDEV_SYNC_US"): the price in force, microseconds, after SIMDEV_PROFILE
 * and the variable itself; -1 when no price has that name. */
typedef double (*simdev_get_price_fn)(const char *name);

/* One of the simulator's extras by name, or NULL when not running on it (a real GPU). The HIP
 * stand-in is linked by its programs; the CUDA driver is loaded by the runtime only at its
 * first call, so it is loaded here if need be (the runtime's own dlopen then finds it). */
static inline void *simdev_sym(const char *name)
{
    void *f = dlsym(RTLD_DEFAULT, name);
    if (!f) {
        void *h = dlopen("libcuda.so.1", RTLD_LAZY);
        if (h)
            f = dlsym(h, name); /* the handle stays open, as the runtime keeps its own */
    }
    return f;
}

#endif
