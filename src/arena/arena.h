/* The caching arena: a backend-neutral caching allocator of device memory.
 *
 * It knows nothing of CUDA or HIP. It reaches the device only through the backend table
 * below, so the same code runs in-process against a fake backend (tests/unit) and inside the
 * preloaded shim against the real CUDA or HIP runtime. docs/arena.md explains the algorithm.
 *
 * Streams are opaque keys (ca_stream_t). The arena passes them back to the backend unchanged
 * when it records an event or makes a stream wait, so the shim may encode pseudo-streams
 * (the per-thread default stream) in the key as it likes. CA_STREAM_LEGACY is the device's
 * legacy default stream.
 */
#ifndef CACHEALLOC_ARENA_H
#define CACHEALLOC_ARENA_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

typedef void *ca_stream_t;
typedef void *ca_event_t;

#define CA_STREAM_LEGACY ((ca_stream_t)0)
#define CA_MAX_DEVICES 64

/* Result of arena calls and of backend calls. */
typedef enum ca_status {
    CA_OK = 0,
    CA_ERR_OOM = 1,      /* out of device memory (or over CACHEALLOC_LIMIT)         */
    CA_ERR_INVALID = 2,  /* bad argument: interior pointer, double free, NULL out  */
    CA_ERR_NOT_OURS = 3, /* pointer the arena never handed out: pass it through    */
    CA_ERR_BACKEND = 4,  /* the backend failed for another reason                  */
} ca_status;

/* The device as the arena sees it. Every function returns a ca_status (CA_OK on success)
 * except event_query. All take the backend's own context first. */
typedef struct ca_backend {
    void *ctx;
    /* Allocate size bytes on device dev (a real driver allocation). CA_ERR_OOM when full. */
    int (*alloc)(void *ctx, int dev, size_t size, void **out);
    /* Give a driver allocation back. May synchronize the device: never called under a lock. */
    int (*release)(void *ctx, int dev, void *ptr);
    int (*event_create)(void *ctx, int dev, ca_event_t *out);
    int (*event_destroy)(void *ctx, int dev, ca_event_t ev);
    /* Record ev on stream s of device dev. */
    int (*event_record)(void *ctx, int dev, ca_event_t ev, ca_stream_t s);
    /* 1 when ev has completed, 0 when not yet, negative on error: never taken as completed (a
     * faulted device answers every query with an error while its work may still be queued). */
    int (*event_query)(void *ctx, int dev, ca_event_t ev);
    /* Block until ev completed. Never called under a lock. */
    int (*event_synchronize)(void *ctx, int dev, ca_event_t ev);
    /* 1 when every piece of work queued on stream s so far has completed, 0 when not yet,
     * negative on error (never taken as idle). May be NULL: fences then record an event on
     * every stream. */
    int (*stream_query)(void *ctx, int dev, ca_stream_t s);
    /* Make stream s wait on the GPU for ev. May be NULL (then only host polling is used). */
    int (*stream_wait_event)(void *ctx, int dev, ca_stream_t s, ca_event_t ev);
    /* Block until device dev is idle. Never called under a lock. */
    int (*device_synchronize)(void *ctx, int dev);
    int (*mem_info)(void *ctx, int dev, size_t *free_bytes, size_t *total_bytes);
    /* Clear the error a failed real allocation left behind (cudaGetLastError), so that a
     * recovered out-of-memory never shows up in the program's own error checks. */
    void (*clear_error)(void *ctx);

    /* Virtual memory management, for expandable segments. All optional: NULL where the driver
     * or runtime lacks them, and then segments are plain driver allocations. Sizes and
     * addresses are multiples of the granularity. None of them may synchronize the device;
     * vmm_unmap is called only for pages the device is done with. */
    /* The page size of physical memory on dev: every other size is a multiple of it. */
    int (*vmm_granularity)(void *ctx, int dev, size_t *out);
    /* Reserve size bytes of virtual addresses (no memory behind them), aligned to the page. */
    int (*vmm_reserve)(void *ctx, int dev, size_t size, void **out);
    /* Give a reservation back; it holds no mapping any more. */
    int (*vmm_free)(void *ctx, int dev, void *base, size_t size);
    /* Create size bytes of physical memory on dev. CA_ERR_OOM when full. */
    int (*vmm_create)(void *ctx, int dev, size_t size, uint64_t *handle);
    /* Drop the creation's reference: the memory lives on while a mapping holds it. */
    int (*vmm_release)(void *ctx, int dev, uint64_t handle);
    /* Map handle (size bytes) at addr, inside a reservation; inaccessible until vmm_set_access. */
    int (*vmm_map)(void *ctx, int dev, void *addr, size_t size, uint64_t handle);
    /* Unmap the mappings that make up [addr, addr+size); a released handle's memory goes back. */
    int (*vmm_unmap)(void *ctx, int dev, void *addr, size_t size);
    /* Give dev read-write access to the mappings that make up [addr, addr+size). */
    int (*vmm_set_access)(void *ctx, int dev, void *addr, size_t size);
    /* Optional: give the device of ordinal `peer` read-write access (on) or none (off) to the
     * mappings of dev's memory that make up [addr, addr+size). */
    int (*vmm_peer_access)(void *ctx, int dev, void *addr, size_t size, int peer, bool on);
} ca_backend;

typedef enum ca_pool_kind { CA_POOL_SPLIT = 0, CA_POOL_BINNED = 1, CA_POOL_NONE = 2 } ca_pool_kind;
/* When a freed block may serve again: SAFE, the reuse contract (fences and events); STREAM,
 * PyTorch's (at once, cross-stream use is the program's business); SYNC, SAFE where a plain
 * free first synchronizes the block's device, as the runtime's own free does (ca_free_synced). */
typedef enum ca_reuse_kind {
    CA_REUSE_SAFE = 0, CA_REUSE_STREAM = 1, CA_REUSE_SYNC = 2
} ca_reuse_kind;
/* How plain frees are known to be past the device (docs/arena.md, "Pending memory"): EVENTS
 * records fences and waits for the oldest that covers a request; DEVICE records none and, when
 * pending memory must be waited for, synchronizes the device once for every pending block;
 * AUTO measures what each of the two costs on the device and takes the cheaper (reuse/price.c). */
typedef enum ca_fences_kind {
    CA_FENCES_EVENTS = 0, CA_FENCES_DEVICE = 1, CA_FENCES_AUTO = 2
} ca_fences_kind;

/* One allocation or segment event, for the timeline (CACHEALLOC_TRACE) and leak reports. */
typedef enum ca_trace_kind {
    CA_TRACE_ALLOC = 'A',        /* program allocated (size = requested bytes)     */
    CA_TRACE_FREE = 'F',         /* program freed                                  */
    CA_TRACE_SEG_ALLOC = 'S',    /* arena took a segment from the driver ("SA")    */
    CA_TRACE_SEG_FREE = 's',     /* arena gave a segment back to the driver ("SF") */
    CA_TRACE_HOST_ALLOC = 'H',   /* program allocated pinned host memory ("HA")    */
    CA_TRACE_HOST_FREE = 'h',    /* program freed pinned host memory ("HF")        */
    CA_TRACE_HOST_PIN = 'P',     /* host pool pinned a block with the driver ("HSA") */
    CA_TRACE_HOST_UNPIN = 'p',   /* host pool unpinned a block ("HSF")             */
} ca_trace_kind;

typedef void (*ca_trace_fn)(void *ctx, ca_trace_kind kind, int dev, const void *ptr, size_t size,
                            ca_stream_t stream);

/* The arena's configuration: usually filled from ca_options (options.h). */
typedef struct ca_config {
    ca_pool_kind pool;
    ca_reuse_kind reuse;
    ca_fences_kind fences;
    uint64_t limit_bytes;          /* 0: no limit                                         */
    unsigned limit_percent;        /* 1..100: limit as a share of device memory; 0: unused */
    uint64_t release_threshold;    /* cached bytes kept per device; UINT64_MAX: keep all  */
    unsigned release_percent;      /* 1..100: threshold as a share of device memory        */
    uint64_t prealloc_bytes;       /* reserved per device at first use; 0: none           */
    uint64_t max_split;            /* blocks at least this large are never split          */
    int expandable;                /* >0: pools grow by mapping pages into one reserved range */
    uint64_t expandable_piece;     /* bytes a growth is mapped in, one handle each (rounded up
                                    * to the driver's page); 0 (auto): the page, and growth
                                    * priced (arena/expand.c, solo_from)                    */
    size_t big_align;              /* blocks this large or more start on a multiple of it (a
                                    * power of two); 0: no alignment beyond 512 bytes       */
    int record_alloc_times;        /* keep each block's allocation time (leak report)     */
    int record_stacks;             /* keep each block's allocation stack (leak report)    */
    ca_trace_fn trace;             /* NULL: no timeline                                   */
    void *trace_ctx;
    int quiet;                     /* no warning line on stderr (unit tests)              */
    int thread_cache;              /* each thread keeps its own freed blocks for itself   */
    /* The ladder's last rung (neighbours.h): when the device refuses, other processes of this
     * API ("cuda", "hip") are asked for what their caches hold free, waiting at most
     * neighbours_wait_ms. NULL: never ask. */
    const char *neighbours_api;
    unsigned neighbours_wait_ms;
    int verbose;                   /* a line on stderr for each round of asking them      */
} ca_config;

/* Per-device counters. reserved = allocated + cached + pending holds at every instant. */
typedef struct ca_dev_stats {
    uint64_t reserved_bytes;       /* in segments and mapped pages from the driver */
    uint64_t allocated_bytes;      /* in blocks the program holds                */
    uint64_t cached_bytes;         /* in free blocks reusable by some stream     */
    uint64_t pending_bytes;        /* freed, waiting for a fence or an event     */
    uint64_t requested_bytes;      /* what the program asked for, before rounding */
    uint64_t peak_reserved_bytes;
    uint64_t peak_allocated_bytes;
    uint64_t alloc_calls;
    uint64_t free_calls;
    uint64_t cache_hits;           /* allocations served without the driver      */
    uint64_t driver_alloc_calls;   /* segments, and pages created for expandable ones */
    uint64_t driver_free_calls;    /* segments, and pages unmapped                   */
    uint64_t fences;               /* fences recorded for the plain API          */
    uint64_t device_syncs;         /* device synchronizations the arena did      */
    uint64_t oom_recoveries;       /* a driver allocation failed, a later step won */
    uint64_t oom_failures;         /* gave up with out-of-memory                 */
    uint64_t invalid_frees;        /* interior pointer or double free            */
    uint64_t segments;
    uint64_t largest_free_block;   /* computed when the stats are read           */
    /* The time the cache's own waits cost the program (stats ABI version 5). */
    uint64_t sync_wait_ns;         /* in the device synchronizations it made (device_syncs) */
    uint64_t fence_wait_ns;        /* waiting for fences and stream events       */
    uint64_t fence_waits;          /* such waits                                 */
    uint64_t grow_ns;              /* in driver calls that grew it: allocations,
                                    * creations and mappings of segments and pages */
    uint64_t growths;              /* such calls                                 */
} ca_dev_stats;

/* Flags of ca_malloc/ca_free: which API the program called. */
#define CA_API_PLAIN 0u   /* cudaMalloc/cudaFree: the fence contract          */
#define CA_API_ASYNC 1u   /* cudaMallocAsync/cudaFreeAsync: stream-ordered    */

typedef struct ca_arena ca_arena;

/* Create an arena over a backend (copied). Never touches the device until first use. */
ca_arena *ca_arena_create(const ca_backend *backend, const ca_config *config);

/* Give every cached segment back to the backend and free the arena. Blocks the program still
 * holds are released too. */
void ca_arena_destroy(ca_arena *a);

/* Forget everything without calling the backend (a forked child: its parent's device memory
 * is not its own). Counters restart at zero. */
void ca_arena_forget(ca_arena *a);

/* Allocate size bytes on device dev for stream s. size 0 gives *out = NULL and CA_OK. On
 * failure after the whole out-of-memory ladder: CA_ERR_OOM and one warning line. */
ca_status ca_malloc(ca_arena *a, int dev, size_t size, ca_stream_t s, unsigned api, void **out);

/* ca_malloc after the caller's inline hit (ca_malloc_hit, tcache/hit.h) missed: the thread's
 * cache is visited once more, without the newest block the hit tried. size > 0, out valid. */
ca_status ca_malloc_missed(ca_arena *a, int dev, size_t size, ca_stream_t s, unsigned api,
                           void **out);

/* Free ptr, freed on stream s (plain API: s is ignored). CA_ERR_NOT_OURS for a pointer the
 * arena never handed out (pass it to the real runtime); CA_ERR_INVALID for an interior
 * pointer or a double free, leaving the pool unchanged. *dev_out (may be NULL) gets the
 * block's device. */
ca_status ca_free(ca_arena *a, void *ptr, ca_stream_t s, unsigned api, int *dev_out);

/* A plain free that first synchronizes the block's device, as cudaFree and hipFree do
 * (CACHEALLOC_REUSE=sync): when it returns, the device has finished everything queued before
 * the call, and the block is reusable at once by every stream. Answers as ca_free (a pointer
 * that is no live block gets ca_free's answer, with no synchronization: the runtime's own free
 * has it). During a stream capture no device call is made and the block waits for a fence. */
ca_status ca_free_synced(ca_arena *a, void *ptr, int *dev_out);

/* Look up a live allocation: its device and usable size. 0 when ptr is not a live block. */
int ca_lookup(ca_arena *a, const void *ptr, int *dev, size_t *size);

/* Where an address lies in the arena's segments (arena/locate.c): the segment holding it and
 * the block of that segment that holds it. */
typedef struct ca_place {
    int dev;
    /* The driver allocation holding it: a plain segment's blocks may begin a little after its
     * base and end before its end, where the driver's base was aligned to less than a block. */
    uintptr_t seg_base;
    size_t seg_size;
    int expandable;  /* a reserved range mapped page by page, not one driver allocation */
    uintptr_t block; /* the block holding the address, and whether the program holds it */
    size_t size;     /* that block's size as it occupies the segment (rounded) */
    size_t requested; /* and as the program asked for it */
    int live;
} ca_place;

/* Finds the segment holding ptr: 1 with *out filled, 0 when no segment of the arena holds it. */
int ca_locate(ca_arena *a, const void *ptr, ca_place *out);

/* One driver mapping of an expandable range: [addr, addr+size), one handle. */
typedef struct ca_piece {
    uintptr_t addr;
    size_t size;
} ca_piece;

/* The whole mappings that hold the live block starting at `block` of an expandable range,
 * `size` bytes (ca_place's size), in address order: their count, 0 when no such live block is
 * there any more, -1 when it takes more than max. What another process must map to see the
 * block: the driver maps a handle whole (cuMemMap's offset must be zero). */
int ca_mapped_pieces(ca_arena *a, uintptr_t block, size_t size, ca_piece *out, int max);

/* The program created stream s on dev (nonblocking: it does not synchronize with the legacy
 * stream). The first extra stream of a device switches it from the single-stream mode
 * to fences, after one device synchronization. */
void ca_stream_created(ca_arena *a, int dev, ca_stream_t s, int nonblocking);

/* The program first used a stream the arena was not told about (the per-thread default
 * stream): same switch as ca_stream_created, without adding it to the fence set (it is a
 * blocking stream, covered by the legacy stream's event). s is CA_STREAM_LEGACY for a second
 * host thread's plain calls, whose default stream may be its own: each thread's plain blocks
 * stay its own (thread caches) until a stream other than the default ones is seen. */
void ca_stream_seen(ca_arena *a, int dev, ca_stream_t s);

/* The program was built for per-thread default streams, which other threads may reach with a
 * pointer they were given: no thread reuses its own plain frees without a fence on dev. */
void ca_per_thread_streams_used(ca_arena *a, int dev);

/* The program destroyed stream s: its pool's blocks are handed to the device. */
void ca_stream_destroyed(ca_arena *a, int dev, ca_stream_t s);

/* Call just before the program's real device synchronization; pass the token to
 * ca_device_synchronized after it returned. Frees made by other threads while the program
 * synchronized are not covered by it: the token says which frees are. */
uint64_t ca_device_sync_begin(ca_arena *a, int dev);

/* The program synchronized device dev (the real call returned success): every free made
 * before ca_device_sync_begin returned token is complete on the device. Also the point where
 * cached bytes above the release threshold go back to the driver. */
void ca_device_synchronized(ca_arena *a, int dev, uint64_t token);

/* The program is about to reset device dev (or destroy its context): give back what the driver
 * would not free by itself, the mappings and reservations of expandable segments. Synchronizes
 * the device when there are any. */
void ca_device_resetting(ca_arena *a, int dev);

/* The program reset device dev: its memory is gone; forget the device's segments. */
void ca_device_reset(ca_arena *a, int dev);

/* Release every fully free segment whose reuse is safe, and unmap every free page of the
 * expandable segments (dev < 0: all devices). Blocks until pending fences are complete.
 * Returns the bytes given back to the driver. */
uint64_t ca_reclaim(ca_arena *a, int dev);

/* The program turned the access of the device of ordinal `peer` to device dev's memory on or
 * off (cudaDeviceEnablePeerAccess, cuCtxEnablePeerAccess, hipDeviceEnablePeerAccess): the
 * arena's mapped memory on dev, which the driver's peer access does not reach, gets the same
 * access, now and at every later growth. CA_ERR_BACKEND when the driver refused some of it. */
ca_status ca_peer_access(ca_arena *a, int dev, int peer, bool on);

/* The driver refused an allocation the arena does not serve (the program's pitched memory, an
 * exporter's own allocation): what the arena holds free on every device goes back, or, when
 * that was nothing, what the neighbours hold (config.neighbours_api). Bytes made free: worth
 * one more try when not 0. No lock of the arena held. */
uint64_t ca_make_room(ca_arena *a);

/* Check every invariant of every device (arena/check.c), taking each device's lock; the
 * process stops at a broken one. Does nothing in builds without assertions. */
void ca_arena_check(ca_arena *a);

/* Called periodically by one thread: true when the program made no allocation or free on
 * device dev for at least idle_ns (0: never) while its cache held free memory there, once per
 * such stretch. The caller then gives that memory back (ca_reclaim). */
bool ca_device_idle(ca_arena *a, int dev, uint64_t now_ns, uint64_t idle_ns);

/* A stream capture is about to begin: until the matching ca_quiet_end the arena makes no backend
 * call at all. It serves what is certainly reusable without one and refuses the rest
 * (CA_ERR_BACKEND, no warning: the caller forwards to the real allocator); work that needs the
 * device is owed and done at the first allocation after the quiet ends. Returns once no thread
 * is inside a backend call that began before. Calls nest. */
void ca_quiet_begin(ca_arena *a);

/* The capture that ca_quiet_begin announced ended (or never began). */
void ca_quiet_end(ca_arena *a);

/* The free memory cudaMemGetInfo reports under the cache for device dev of `total` bytes whose
 * driver has driver_free free: the largest plain allocation the ladder serves, with every
 * smaller one, counting pending and thread-kept blocks as free (arena/free_figure.c). */
uint64_t ca_free_for_program(ca_arena *a, int dev, uint64_t driver_free, uint64_t total);

/* Snapshot of device dev's counters. Returns 0 when the arena never saw dev. */
int ca_get_stats(ca_arena *a, int dev, ca_dev_stats *out);

/* Number of device slots in use (highest device seen + 1). */
int ca_device_count(ca_arena *a);

/* Call fn for every block the program still holds (leak report). t_alloc_ns is 0 unless
 * config.record_alloc_times; stack/depth are NULL/0 unless config.record_stacks. Called
 * under the device's lock: fn must not call the arena. */
typedef void (*ca_live_fn)(void *ctx, int dev, const void *ptr, size_t requested,
                           uint64_t t_alloc_ns, void *const *stack, int depth);
void ca_foreach_live(ca_arena *a, ca_live_fn fn, void *ctx);

#endif
