/* sd.h: the backend-neutral core of the simulated device, called by the CUDA and HIP fronts.
 * Every function returns a code numbered like cudaError_t (the HIP front maps the few that
 * differ). Stream arguments are the program's handles: 0, 1 (legacy), 2 (per-thread) or one
 * returned by sd_stream_create; `ptsz` says that 0 means the per-thread stream. */
#ifndef SD_H
#define SD_H

#include <stddef.h>
#include <stdint.h>

#include "../simdev.h"

enum {
    SD_OK = 0,
    SD_EINVAL = 1,
    SD_ENOMEM = 2,
    SD_EDEVPTR = 17,
    SD_EDIR = 21,
    SD_ENODEV = 100,
    SD_EDEVICE = 101,
    SD_ECONTEXT = 201, /* CUDA_ERROR_INVALID_CONTEXT, hipErrorInvalidContext */
    SD_EMAP = 205,     /* CUDA_ERROR_MAP_FAILED, hipErrorMapFailed */
    SD_EHANDLE = 400,
    SD_ENOTREADY = 600,
    SD_EILLEGAL = 700,
    SD_EPEERON = 704,  /* CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, hipErrorPeerAccessAlreadyEnabled */
    SD_EPEEROFF = 705, /* CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, hipErrorPeerAccessNotEnabled */
    SD_ENOTSUP = 801,
    SD_EBADFREE = -1 /* free of something that is not a live allocation: each front maps it */
};

enum { SD_PTR_UNREGISTERED = 0, SD_PTR_HOST = 1, SD_PTR_DEVICE = 2, SD_PTR_MANAGED = 3 };

typedef void (*sd_hostfn)(void *arg);
typedef void (*sd_callback)(void *stream, int status, void *arg);

/* Names the runtime ("cuda" or "hip") for messages; call before any other sd_ function. */
void sd_set_flavor(const char *name);
/* The runtime name set by sd_set_flavor. */
const char *sd_flavor(void);

/* Stores the number of simulated devices (SIMDEV_DEVICES); SD_ENODEV when it is 0. */
int sd_device_count(int *n);
/* Makes `dev` the calling thread's current device. */
int sd_set_device(int dev);
/* Stores the calling thread's current device. */
int sd_get_device(int *dev);
/* Checks a device query's arguments: SD_EINVAL for a null `out`, SD_EDEVICE for a bad `dev`. */
int sd_check_device_arg(const void *out, int dev);
/* SD_EILLEGAL if the current device carries the sticky fault, else SD_OK. */
int sd_check_current(void);
/* SIMDEV_HIP_REENTRANT: the runtime reaches its own exported functions from inside. */
int sd_hip_reentrant(void);
/* Capacity of a device in bytes (SIMDEV_MEMORY). */
size_t sd_capacity(void);

/* Records `code` (already mapped by the front) as the calling thread's last error. */
void sd_record_error(int code);
/* What every front call returns: maps SD_EBADFREE to the front's `badfree` code and records a
 * failure (SD_ENOTREADY is a state, not one) as the last error. */
int sd_ret(int rc, int badfree);
/* Returns the last error (or the sticky fault); clears a non-sticky one when `clear`. */
int sd_last_error(int clear);

int sd_malloc(void **p, size_t n);
int sd_free(void *p);
int sd_malloc_async(void **p, size_t n, void *stream, int ptsz);
int sd_free_async(void *p, void *stream, int ptsz);
int sd_mem_info(size_t *free_bytes, size_t *total);
/* Pinned (page-locked) host memory, kept with `flags` (each front checks them first) and
 * charged SIMDEV_HOST_ALLOC_US plus SIMDEV_HOST_ALLOC_US_PER_MIB per MiB; counted in the
 * current device's host_allocs and host_bytes. Zero bytes succeed with NULL. */
int sd_host_alloc(void **p, size_t n, unsigned flags);
/* Managed memory: host memory counted against the current device's capacity; flags must be
 * attach-global (1) or attach-host (2). */
int sd_managed_alloc(void **p, size_t n, unsigned flags);
/* Frees pinned or managed memory by its start, after waiting for the device; a pinned block
 * then costs SIMDEV_HOST_FREE_US plus SIMDEV_HOST_FREE_US_PER_MIB per MiB. SD_EBADFREE for any
 * other address (the block stays). NULL is a no-op. */
int sd_host_free(void *p);
/* The pinned block holding p, at its start or inside: its start, requested size and flags
 * (NULL outs skipped); SD_EINVAL when p is in none (managed memory is none). */
int sd_host_query(const void *p, void **base, size_t *size, unsigned *flags);
/* Classifies a pointer as SD_PTR_*; fills the device and the two addresses. */
int sd_pointer_info(const void *p, int *type, int *device, void **dptr, void **hptr);

/* The owner a user stream was created with; SD_EHANDLE for anything else. */
int sd_stream_owner(void *stream, void **owner);
/* The device allocation holding p: its start and requested size; SD_EINVAL when none does. */
int sd_alloc_range(const void *p, void **base, size_t *size);
/* What the CUDA driver's address queries answer for p, as an H100 answers them
 * (docs/simdevice.md). In a device allocation or a pinned host block: `base`/`size`
 * (cuMemGetAddressRange) and `range_*` (the RANGE attributes) are the allocation with its
 * requested size, `map_*` (the MAPPING attributes) it rounded up to the 2 MiB large page. In
 * VMM memory: base/size and map_* are the one mapping holding p, range_* the reservation
 * holding it, which an unmapped reserved address has too. Sizes are 0 where nothing holds p. */
struct sd_addr_query {
    uintptr_t base, range_base, map_base;
    size_t size, range_size, map_size;
    int legacy_ipc; /* cuIpcGetMemHandle may export the memory: sd_malloc's only */
    int vmm;        /* p lies in a VMM mapping */
    int host;       /* p lies in a pinned host block */
};
/* Fills q for p; SD_EINVAL when no allocation, mapping or pinned block holds p (base and size
 * are 0). */
int sd_addr_query(const void *p, struct sd_addr_query *q);

/* kind: 0 HtoH, 1 HtoD, 2 DtoH, 3 DtoD, 4 default. `wait` makes it a synchronous copy. */
int sd_memcpy(void *dst, const void *src, size_t n, int kind, void *stream, int ptsz, int wait);
int sd_memset(void *dst, int value, size_t n, void *stream, int ptsz);

int sd_stream_create(void **out, unsigned flags, int priority);
int sd_stream_destroy(void *stream);
int sd_stream_sync(void *stream, int ptsz);
int sd_stream_query(void *stream, int ptsz);
int sd_stream_wait_event(void *stream, void *event, unsigned flags, int ptsz);
int sd_stream_flags(void *stream, int ptsz, unsigned *flags);
int sd_host_func(void *stream, int ptsz, sd_hostfn fn, void *arg);
int sd_stream_callback(void *stream, int ptsz, sd_callback cb, void *arg, unsigned flags);

int sd_event_create(void **out, unsigned flags);
int sd_event_record(void *event, void *stream, int ptsz);
int sd_event_query(void *event);
int sd_event_sync(void *event);
int sd_event_destroy(void *event);
int sd_event_elapsed(float *ms, void *start, void *end);

int sd_device_sync(void);

/* Tags the calling thread's later allocations and streams with `owner` (a driver context). */
void sd_set_owner(void *owner);
/* Waits for device `dev`, destroys the user streams and frees the allocations tagged with
 * `owner`; with `clear_fault`, also clears the device's sticky fault (a context reset). */
int sd_owner_release(int dev, void *owner, int clear_fault);
int sd_device_reset(void);
/* Turns the current device's access to device peer's memory on or off (a program's
 * cudaDeviceEnablePeerAccess / DisablePeerAccess): SD_EDEVICE for itself or no such device,
 * SD_EPEERON when already on, SD_EPEEROFF when not on. Recorded, not enforced on
 * cudaMalloc memory (docs/simdevice.md); mapped memory has access of its own. A reset of the
 * device turns its peer access off. */
int sd_peer_access(int peer, int on);
/* Whether the current device has turned its access to peer's memory on. */
int sd_peer_enabled(int peer);

/* Virtual memory management (cuMem* / hipMem*): address reservations, physical handles and the
 * mappings between them, in units of the granularity. Codes follow the CUDA driver's docs. */
/* An access descriptor as both CUDA (CUmemAccessDesc) and HIP (hipMemAccessDesc) lay it out:
 * a location (type 1 = device, id = ordinal) and protection flags (0, 1 read, 3 read-write). */
struct sd_vmm_access {
    int loc_type, loc_id, flags;
};
/* The device of an allocation property that names pinned memory (type 1) on a device location
 * (type 1), or -1 for anything else. */
int sd_vmm_prop_device(int alloc_type, int loc_type, int loc_id);
/* Applies n access descriptors to [ptr, ptr+size); SD_EINVAL for none or a non-device one. */
int sd_vmm_set_access_list(void *ptr, size_t size, const struct sd_vmm_access *d, size_t n);

/* Stores the allocation granularity (2 MiB, minimum and recommended alike); SD_EINVAL for a
 * null out or a bad device. */
int sd_vmm_granularity(size_t *out, int dev);
/* Reserves `size` bytes (a granularity multiple) of device address space aligned to `alignment`
 * (0: the granularity), at `hint` when that range is free; SD_ENOMEM when none is left. */
int sd_vmm_reserve(void **ptr, size_t size, size_t alignment, uintptr_t hint);
/* Frees the reservation that sd_vmm_reserve returned as exactly (ptr, size); SD_EINVAL when it
 * is not one or still holds mappings. */
int sd_vmm_free(void *ptr, size_t size);
/* Creates `size` bytes (a granularity multiple) of physical memory on device `dev`, counted
 * against its capacity until released and unmapped everywhere; SD_ENOMEM beyond capacity.
 * `shareable`: it may be exported to other processes (sd_vmm_export). */
int sd_vmm_create(uint64_t *handle, size_t size, int dev, int shareable);
/* Stores a new descriptor (the caller's to close) through which another process, or this one,
 * imports a shareable handle's memory. SD_EINVAL for a null out, a handle that is not live or
 * one not created shareable. */
int sd_vmm_export(int *fd, uint64_t handle);
/* A new handle to the memory an exported descriptor names (the caller keeps `fd`), on the
 * exporter's device and not counted against this process's capacity. SD_EINVAL for a null
 * out or a descriptor that is not an export of a device this process has. */
int sd_vmm_import(uint64_t *handle, int fd);
/* The handle of the mapping holding ptr, with one more reference that sd_vmm_release drops.
 * SD_EINVAL for a null out or an address in no mapping. */
int sd_vmm_retain(uint64_t *handle, void *ptr);
/* Drops one reference of a handle (its creation, import or a retain); after the last the handle
 * no longer names the memory, which goes with its last mapping. SD_EINVAL for a handle that
 * is not live. */
int sd_vmm_release(uint64_t handle);
/* Maps [offset, offset+size) of a handle at ptr, inside one reservation and over no mapping;
 * the range stays inaccessible until sd_vmm_set_access. */
int sd_vmm_map(void *ptr, size_t size, size_t offset, uint64_t handle);
/* Unmaps [ptr, ptr+size), which must consist of whole mappings, after in-flight copies finish. */
int sd_vmm_unmap(void *ptr, size_t size);
/* Sets device `dev`'s access to the whole mappings making up [ptr, ptr+size): flags 0 none,
 * 1 read, 3 read-write. SD_EDEVICE for a bad device. */
int sd_vmm_set_access(void *ptr, size_t size, int dev, int flags);

/* Interprocess memory (cuIpc* / hipIpc*). A handle is 64 bytes laid out as ROCm's
 * ihipIpcMemHandle_t: 32 opaque bytes naming the exporting process and its allocation, then
 * the allocation's size and the exported pointer's offset in it (0 unless asked for). */
#define SD_IPC_HANDLE_SIZE 64
/* Fills `handle` naming the whole device allocation (made by sd_malloc) that holds p; with
 * `with_offset` the handle also carries p's offset in it. SD_EINVAL when p is not inside
 * such an allocation (stream-ordered, pool, VMM, host, imported or unknown memory). */
int sd_ipc_export(const void *p, void *handle, int with_offset);
/* Maps the allocation a handle of another process names into the current device's range
 * and stores its base plus the handle's offset; a handle the calling context already opened
 * gets the same address and one reference more. SD_EINVAL for a malformed handle,
 * SD_ECONTEXT for one exported by this process, SD_EMAP when its allocation is gone. */
int sd_ipc_open(const void *handle, void **p);
/* Drops one reference of the imported mapping that starts at p (with `inside`: that holds
 * p), unmapping it at the last, after the device's work. SD_EHANDLE for anything else. */
int sd_ipc_close(const void *p, int inside);

/* Memory pools (cuMemPool* / hipMemPool*). Pool handles are opaque; codes follow the CUDA
 * driver's docs. Attributes are numbered as CUmemPool_attribute (and hipMemPoolAttr). */
/* Creates a pool of pinned memory on device dev, at most max_size bytes (0: no limit). */
int sd_pool_create(void **pool, int dev, size_t max_size);
/* Destroys a created pool (a default one is SD_EINVAL); allocations still out keep its memory
 * until freed. A destroyed current pool leaves the default one current. */
int sd_pool_destroy(void *pool);
/* Stores device dev's default pool. */
int sd_pool_default(int dev, void **pool);
/* Stores device dev's current pool (what stream-ordered allocations on its streams use). */
int sd_pool_current(int dev, void **pool);
/* Makes pool, which must belong to dev, dev's current pool; SD_EDEVICE for a bad device. */
int sd_pool_set_current(int dev, void *pool);
/* Stream-ordered allocation of n bytes from pool, whatever the stream's device. */
int sd_malloc_from_pool(void **p, size_t n, void *pool, void *stream, int ptsz);
/* Gives back what the pool keeps until it reserves no more than `keep` bytes. */
int sd_pool_trim(void *pool, size_t keep);
/* Reads (set == 0) or writes one attribute through `value` (int or uint64_t, by attribute). */
int sd_pool_attr(void *pool, int attr, void *value, int set);
/* Sets peers' access to the pool's memory from n descriptors (device locations, flags 0, 1 or
 * 3; the owner's access stays read-write). Recorded, not enforced on copies. */
int sd_pool_set_access(void *pool, const struct sd_vmm_access *d, size_t n);
/* Stores the access of device location (loc_type 1, loc_id) to the pool's memory. */
int sd_pool_get_access(int *flags, void *pool, int loc_type, int loc_id);

/* One row of a front's error table. */
struct sd_errname {
    int code;
    const char *name, *text;
};
/* The row of `code` in a table of n rows, or NULL. */
const struct sd_errname *sd_err_find(const struct sd_errname *t, size_t n, int code);

/* One row of a front's device-attribute table (the front's enumerator values). */
struct sd_attr {
    int attr, value;
};
/* Stores attribute `attr` of device `dev` from a table of n rows: SD_EINVAL for a null v or an
 * attribute not in the table, SD_EDEVICE for a bad device. */
int sd_device_attr(const struct sd_attr *t, size_t n, int *v, int attr, int dev);
/* Stores a front's constant version number; SD_EINVAL for a null out. */
int sd_put_version(int *out, int version);
/* Stream priorities exist but are not modelled: stores 0 in each non-null bound. */
int sd_priority_range(int *least, int *greatest);

/* Writes a kernel-launch refusal: SD_ENOTSUP (kernels cannot run here), after the sticky check. */
int sd_launch_refused(const char *what);
/* One line on stderr when SIMDEV_VERBOSE is set. */
void sd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Counters of `device`, or totals when device == -1. 0 on success, -1 on a bad argument. */
int sd_get_counters(int device, struct simdev_counters *out);
/* The price in force named by its variable ("SIMDEV_SYNC_US"), microseconds, after
 * SIMDEV_PROFILE and the variable itself; -1 when no price has that name. */
double sd_config_price(const char *name);

/* Stream capture and graphs (sd_capture*.c, sd_graph*.c). CUDA and HIP number these codes
 * alike; capture modes and statuses are the driver's enumerators. */
enum {
    SD_EILLSTATE = 401,      /* begin on a capturing stream, end on one that is not */
    SD_ECAPUNSUP = 900,      /* not permitted while capturing (the capture is invalidated) */
    SD_ECAPINVALID = 901,    /* the capture was invalidated by an earlier error */
    SD_ECAPMERGE = 902,      /* would merge two capture sequences */
    SD_ECAPUNMATCHED = 903,  /* ended on a stream that did not begin it */
    SD_ECAPUNJOINED = 904,   /* a forked stream never joined the origin again */
    SD_ECAPISOLATION = 905,  /* a dependency across the capture's boundary */
    SD_ECAPIMPLICIT = 906,   /* legacy-stream work while a blocking stream captures */
    SD_ECAPEVENT = 907,      /* a query or wait of an event recorded in a capture */
    SD_ECAPTHREAD = 908,     /* ended by another thread than the one that began it */
};
enum { SD_CAPTURE_GLOBAL = 0, SD_CAPTURE_THREAD_LOCAL = 1, SD_CAPTURE_RELAXED = 2 };
enum { SD_CAPSTATUS_NONE = 0, SD_CAPSTATUS_ACTIVE = 1, SD_CAPSTATUS_INVALIDATED = 2 };

/* Begins capturing `stream` in `mode`: its later work is recorded, not run. */
int sd_capture_begin(void *stream, int ptsz, int mode);
/* Ends the capture `stream` began; *graph gets the graph, or NULL when it was invalidated. */
int sd_capture_end(void *stream, int ptsz, void **graph);
/* A stream's capture status and, while active, its id, graph and current dependencies (node
 * handles; *ndeps of them, edge data of edge_size zero bytes each in *edges). NULL outs are
 * skipped. */
int sd_capture_info(void *stream, int ptsz, int *status, uint64_t *id, void **graph,
                    void *const **deps, const void **edges, size_t edge_size, size_t *ndeps);
/* Swaps the calling thread's capture interaction mode with *mode. */
int sd_capture_exchange_mode(int *mode);
/* Makes an executable graph of a graph captured to its end. */
int sd_graph_instantiate(void **exec, void *graph);
/* SD_OK when exec is an executable graph, else SD_EHANDLE (cuGraphUpload has nothing to do). */
int sd_graph_exec_check(void *exec);
/* Queues every node of exec on stream, in an order its dependencies allow. */
int sd_graph_launch(void *exec, void *stream, int ptsz);
/* Destroys an executable graph; launches already queued still run. */
int sd_graph_exec_destroy(void *exec);
/* Destroys a graph; its executable graphs keep working. */
int sd_graph_destroy(void *graph);

#endif
