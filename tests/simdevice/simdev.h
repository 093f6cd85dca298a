/* simdev.h: the simulated device's own extras, for test programs.
 * Programs link against the real runtime, so they reach these with
 * dlsym(RTLD_DEFAULT, "simdev_get_counters") / dlsym(RTLD_DEFAULT, "simdev_identify"). */
#ifndef SIMDEV_H
#define SIMDEV_H

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
    uint64_t vmm_creates;         /* successful cuMemCreate/hipMemCreate on this device */
    uint64_t vmm_releases;        /* successful cuMemRelease/hipMemRelease of its handles */
    uint64_t maps;                /* mappings of its handles made by cuMemMap/hipMemMap */
    uint64_t unmaps;              /* mappings of its handles removed by cuMemUnmap/hipMemUnmap */
};

typedef int (*simdev_get_counters_fn)(int device, struct simdev_counters *out);
typedef const char *(*simdev_identify_fn)(void);

#endif
