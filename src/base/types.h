/* The arena's types that the libraries below it share: streams and events as opaque keys, the
 * status of a call, the configuration (options/ fills it), the counters (stats/ publishes
 * them) and the timeline's events (stats/trace.c writes them). A header of its own, so that
 * nothing below the arena includes the arena's interface (arena/arena.h). */
#ifndef CACHEALLOC_BASE_TYPES_H
#define CACHEALLOC_BASE_TYPES_H

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
                                    * priced (block/expand.c, solo_from)                    */
    size_t big_align;              /* blocks this large or more start on a multiple of it (a
                                    * power of two); 0: no alignment beyond 512 bytes       */
    int record_alloc_times;        /* keep each block's allocation time (leak report)     */
    int record_stacks;             /* keep each block's allocation stack (leak report)    */
    ca_trace_fn trace;             /* NULL: no timeline                                   */
    void *trace_ctx;
    int quiet;                     /* no warning line on stderr (unit tests)              */
    int thread_cache;              /* each thread keeps its own freed blocks for itself   */
    unsigned reserve_factor;       /* times the working set reserved before pending memory
                                    * is waited for instead of grown past; 0: 2            */
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

#endif
