/* sd_internal.h: state shared by the core's files. One global mutex (sd_lock) guards all of it;
 * sd_cv is broadcast whenever an operation completes or a stream worker exits. */
#ifndef SD_INTERNAL_H
#define SD_INTERNAL_H

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "sd.h"

#define SD_MAX_DEVICES 64
#define SD_ALIGN 512u
#define SD_BIG_ALIGN ((size_t)2 << 20) /* where allocations of this size or more start */

struct sd_config {
    int devices;
    size_t memory;
    double malloc_us, malloc_us_per_gib, free_us, free_us_per_gib, async_us;
    double vmm_reserve_us, vmm_free_us, vmm_create_us, vmm_release_us, vmm_map_us,
        vmm_unmap_us, vmm_access_us;
    double host_alloc_us, host_alloc_us_per_mib, host_free_us, host_free_us_per_mib;
    size_t pinned_limit; /* pinned bytes the process may hold; 0: no limit */
    int verbose;
    int hip_reentrant; /* hipMalloc calls the exported hipExtMallocWithFlags (1) or
                        * hipMallocAsync (2) (SIMDEV_HIP_REENTRANT) */
    size_t base_offset; /* bytes past its boundary at which an allocation of SD_BIG_ALIGN or
                         * more starts (SIMDEV_BASE_OFFSET) */
    const char *counters_file;
    long fail_alloc_nth; /* 0: off */
    double fail_alloc_rate, fail_event_create_rate, fail_event_record_rate;
    long fail_seed;
    double sync_delay_us;
    /* The fence calls' prices (docs/simdevice.md, "The cost model"): each call takes at least
     * this long, the simulator's own time included. */
    double op_latency_us, launch_us, event_record_us, event_query_us, stream_query_us,
        stream_wait_us, sync_us;
    double ctx_sync_us; /* the least cost of a device-wide synchronization (SIMDEV_CTX_SYNC_US) */
    const char *profile; /* the price list in force (SIMDEV_PROFILE): a name or a file's path */
    const char *shared; /* SIMDEV_SHARED: the name processes share the devices under, or NULL */
};
extern struct sd_config sd_cfg;
/* Reads SIMDEV_* once; safe to call any number of times. */
void sd_config_init(void);

/* Parses v as a number from 0 to hi into *x; false, *x untouched, when it is not one. Inline:
 * the configuration and the profiles both parse, and sit below sd_util.c, which logs. */
static inline bool sd_parse_real(const char *v, double hi, double *x)
{
    char *end;
    errno = 0;
    double y = strtod(v, &end);
    if (end == v || *end || errno || !isfinite(y) || y < 0 || y > hi)
        return false;
    *x = y;
    return true;
}

/* Price profiles (sd_profiles.c): the price lists SIMDEV_PROFILE names. */
/* Sets every price of cfg to the profile's value, or to what env_us(variable, that value) reads
 * when its variable is set; returns the profile's name (a file's path for a file). A bad name
 * or file line gets one line on stderr. */
const char *sd_profile_apply(struct sd_config *cfg, double (*env_us)(const char *, double));
/* The price of cfg named `name` (see sd_config_price), or -1. */
double sd_profile_price(const struct sd_config *cfg, const char *name);
/* Logs the profile in force and the variables that override it (SIMDEV_VERBOSE). */
void sd_profile_log(const struct sd_config *cfg);

/* One live device allocation. */
struct sd_alloc {
    uintptr_t addr;
    size_t size;   /* as requested */
    size_t rsize;  /* what counts against capacity: sd_charge() */
    bool packed;   /* a small cuMemAlloc block inside the device's shared pages */
    size_t span;   /* page-rounded: address space taken, from addr - lead */
    size_t lead;   /* addr lies this far past the page its mapping starts at (SIMDEV_BASE_OFFSET) */
    bool async;
    bool free_pending; /* a stream-ordered free is queued */
    void *owner;       /* the driver context that made it (NULL for the runtime fronts) */
    struct sd_pool *pool; /* the pool a stream-ordered allocation came from */
    /* Interprocess memory (sd_ipc.c): an exported or imported allocation is backed by a
     * memfd that both processes map. */
    int ipc;           /* 0, SD_IPC_EXPORTED or SD_IPC_IMPORTED */
    int fd;            /* exported: the memfd, open while the allocation lives */
    uint64_t ipc_id;   /* the export's number in the exporting process */
    int ipc_pid;       /* imported: the exporting process */
    unsigned ipc_refs; /* imported: opens not yet closed */
    uint64_t graph;    /* nonzero: graph memory (sd_graph_mem.c), reserved for a graph */
    bool mapped;       /* graph memory between its allocation and its free in a launch */
    unsigned host_flags; /* pinned host memory: the flags it was allocated with */
};

/* The page-aligned start of a's mapping: its address less its lead. */
static inline uintptr_t sd_alloc_start(const struct sd_alloc *a)
{
    return a->addr - a->lead;
}

enum { SD_IPC_EXPORTED = 1, SD_IPC_IMPORTED = 2 };

/* Whether a is memory of sd_malloc, the only kind cuIpcGetMemHandle exports: not pool, graph,
 * VMM (never in a device's table) or imported memory. A pending free aside, which refuses an
 * export but does not change what the memory is. */
static inline bool sd_ipc_exportable(const struct sd_alloc *a)
{
    return !a->async && !a->pool && a->ipc != SD_IPC_IMPORTED;
}

struct sd_table {
    struct sd_alloc *v;
    size_t n, cap;
};

struct sd_stream;
struct sd_event;

struct sd_device {
    int id;
    uint64_t peers;   /* devices whose memory it may access (sd_peer_access) */
    uintptr_t base;   /* 0 until first use */
    size_t range;     /* bytes of reserved address space */
    uintptr_t cursor; /* next-fit position */
    size_t used;
    size_t packed_bytes; /* live small blocks' 512-rounded bytes, in shared 2 MiB pages */
    struct sd_table allocs;
    struct { uintptr_t addr; size_t size; } freed[64]; /* recent frees, to name faults */
    unsigned freed_next;
    pthread_rwlock_t access; /* readers: ops touching memory; writer: unmapping */
    int sticky;
    uint64_t gen; /* bumped by reset: stale per-thread streams are dropped */
    struct sd_stream *streams; /* every stream whose worker is alive */
    struct sd_stream *legacy;
    struct sd_event *events;
    struct simdev_counters c;
};

extern pthread_mutex_t sd_lock;
extern pthread_cond_t sd_cv;
extern struct sd_device sd_dev[SD_MAX_DEVICES];

/* The owner that the calling thread's new allocations and streams are tagged with. */
void *sd_owner_get(void);

/* Initializes the core once (config, locks). */
void sd_init(void);
/* The calling thread's current device. */
struct sd_device *sd_cur(void);
/* Reserves the device's address range if not yet done. Under sd_lock. */
int sd_dev_reserve(struct sd_device *d);
/* The device whose address range holds p, or NULL. Under sd_lock. */
struct sd_device *sd_dev_of(const void *p);

/* Allocation table (sorted by address). All under sd_lock. */
struct sd_alloc *sd_table_find_start(struct sd_table *t, uintptr_t p);
struct sd_alloc *sd_table_find_containing(struct sd_table *t, uintptr_t p);
int sd_table_insert(struct sd_table *t, const struct sd_alloc *a);
void sd_table_remove(struct sd_table *t, uintptr_t addr);
/* Picks `span` bytes of d's address range, next fit, without mapping or counting them;
 * SD_ENOMEM when no gap is left. Under sd_lock. */
int sd_dev_place(struct sd_device *d, size_t span, uintptr_t *out);
/* Carves and maps a device allocation; SD_ENOMEM when capacity or address space is exhausted. */
int sd_dev_alloc(struct sd_device *d, size_t n, bool async, void **out);
/* A device's capacity, shared with the other processes of SIMDEV_SHARED when set (sd_share.c).
 * All under sd_lock. */
/* True when n more bytes fit on d beside what this and live other processes use; they are then
 * claimed for this process (others count them) until its use of d next changes. */
bool sd_dev_fits(struct sd_device *d, size_t n);
/* The bytes of d that neither this process nor a live other one uses (cuMemGetInfo's free). */
size_t sd_dev_free(const struct sd_device *d);
/* Adds n bytes to d's use (its counters and this process's share of it). */
void sd_dev_grow(struct sd_device *d, size_t n);
/* Takes n bytes off d's use (its counters and this process's share of it). */
void sd_dev_shrink(struct sd_device *d, size_t n);
/* The pinned host block (not managed memory) holding p: its start, requested size and flags;
 * false when none holds p. Under sd_lock. */
bool sd_host_block(uintptr_t p, uintptr_t *base, size_t *size, unsigned *flags);
/* Unmaps and forgets a live allocation. Under sd_lock. */
void sd_dev_release(struct sd_device *d, uintptr_t addr);
/* Puts the reserved, inaccessible range back over an exported or imported allocation's span
 * (the memfd mapping goes; the exporter's memfd is closed). Under sd_lock and d->access. */
void sd_ipc_unback(uintptr_t addr, size_t span, int ipc, int fd);
/* Checks device d may touch [p, p+n) of owner's memory (write it when `write`): one live
 * allocation, or VMM mappings d has access to; else prints the fault line, makes d sticky and
 * returns false. Under sd_lock. */
bool sd_dev_check_access(struct sd_device *d, struct sd_device *owner, const char *what,
                         uintptr_t p, size_t n, bool write);

/* The VMM address region as the rest of the core sees it (sd_vmm_space.c). All under sd_lock. */
/* Whether p lies in the VMM address region, reserved or not. */
bool sd_vmm_holds(uintptr_t p);
/* The device of the mapping holding p; the current device elsewhere in the VMM region (so an
 * access there is a device access, and faults); NULL outside the region. */
struct sd_device *sd_vmm_dev_of(uintptr_t p);
/* Whether p lies in a VMM mapping, accessible or not. */
bool sd_vmm_mapped(uintptr_t p);
/* The start and size of the VMM mapping (`mapping`) or reservation holding p; false when none
 * does. */
bool sd_vmm_span_of(uintptr_t p, bool mapping, uintptr_t *base, size_t *size);
/* NULL when device `dev` may touch [p, p+n) of the VMM region (write it when `write`), else
 * why not, for the fault line. */
const char *sd_vmm_refusal(uintptr_t p, size_t n, int dev, bool write);
/* Unmaps and frees every physical handle of d, released or not (device reset). */
void sd_vmm_drop_device(struct sd_device *d);

/* Memory pools (sd_pool.c; sd_pool_alloc in sd_pool_alloc.c). All under sd_lock. */
struct sd_pool;
/* Allocates n bytes from pool p (NULL: device d's current pool) on p's device: the pool's kept
 * bytes first, then new capacity; SD_ENOMEM beyond the pool's maximum or the device. */
int sd_pool_alloc(struct sd_pool *p, struct sd_device *d, size_t n, void **out);
/* An allocation of rsize bytes came back to p: kept (still counted on the device), or given
 * back to the device with a destroyed pool. */
void sd_pool_returned(struct sd_pool *p, size_t rsize);
/* A synchronization: every pool gives back what it keeps beyond its threshold. Which pool a
 * real driver trims at which synchronization is not documented: all of them is the simplest
 * rule under which a program that synchronizes sees its memory back. */
void sd_pool_sync_trim(void);
/* Every pool of d gives back all it keeps (reset, context release). */
void sd_pool_drop_device(struct sd_device *d);

/* Pointer sets for validating handles. Under sd_lock. */
struct sd_set {
    uintptr_t *v;
    size_t cap, n;
};
bool sd_set_has(const struct sd_set *s, const void *p);
int sd_set_add(struct sd_set *s, const void *p);
void sd_set_del(struct sd_set *s, const void *p);

/* Operations queued on a stream. */
enum sd_op_kind { OP_NOP, OP_COPY, OP_SET, OP_HOSTFN, OP_CALLBACK, OP_EVENT, OP_FREE, OP_GMEM };

struct sd_dep {
    struct sd_stream *s;
    uint64_t seq;
};

struct sd_op {
    struct sd_op *next;
    enum sd_op_kind kind;
    uint64_t seq;
    double queued; /* sd_now() when queued: it completes no sooner than the latency after */
    union {
        struct { void *dst; const void *src; size_t n; int dst_dev, src_dev; } copy;
        struct { void *dst; int value; size_t n; int dev; } set;
        struct { sd_hostfn fn; void *arg; } hostfn;
        struct { sd_callback cb; void *arg; void *handle; } callback;
        struct { struct sd_event *ev; uint64_t gen; } event;
        struct { uintptr_t addr; int dev; } free;
        struct { uint64_t id; bool map; } gmem; /* a graph's memory node */
    } u;
    int ndeps;
    struct sd_dep deps[];
};

enum sd_stream_kind { SK_USER, SK_LEGACY, SK_PERTHREAD };

struct sd_stream {
    struct sd_device *dev;
    enum sd_stream_kind kind;
    unsigned flags; /* bit 0: non-blocking */
    int priority;
    uint64_t enq, done;
    double done_time; /* monotonic seconds of the last completion */
    struct sd_op *head, *tail;
    pthread_cond_t work;
    int refs;
    bool closing;
    bool running; /* its head op is being run, by the worker or a waiting thread */
    void *owner; /* the driver context that created it (NULL for the runtime fronts) */
    struct sd_stream *next, *prev; /* in dev->streams while the worker lives */
    struct sd_capstream *capture;  /* its part in a stream capture, or NULL (sd_capture.h) */
};

struct sd_event {
    struct sd_device *dev;
    unsigned flags;
    bool recorded;
    struct sd_stream *s;
    uint64_t seq;
    uint64_t gen; /* bumped per record: only the latest record stamps the time */
    double time;
    bool timed;
    int refs;
    struct sd_event *next, *prev;
    struct sd_capmark *capmark; /* its latest record was inside a capture (sd_capture.h) */
};

extern struct sd_set sd_streams_set, sd_events_set;

/* Stream handles (sd_stream_handle.c). */
/* Resolves a program's stream handle to a stream (creating default streams lazily).
 * Under sd_lock. */
int sd_resolve_stream(void *handle, int ptsz, struct sd_stream **out);
/* sd_resolve_stream, then fails with the sticky fault of the stream's device. Under sd_lock. */
int sd_resolve_live(void *handle, int ptsz, struct sd_stream **out);
/* sd_resolve_live, then a new op of `kind` for the caller to fill and queue (*op is NULL on
 * failure). Under sd_lock. */
int sd_op_prepare(void *handle, int ptsz, enum sd_op_kind kind, struct sd_stream **s,
                  struct sd_op **op);
/* Queues an op of proto's kind and payload on the live stream `handle` names; fills the
 * optional *s and *seq. Under sd_lock (which sd_enqueue may drop when out of memory). */
int sd_submit(void *handle, int ptsz, const struct sd_op *proto, struct sd_stream **s,
              uint64_t *seq);
/* Takes s out of its capture, asks it to drain and exit, and drops the owner's reference.
 * Under sd_lock. */
void sd_stream_close(struct sd_stream *s);

/* Queues and their workers (sd_stream.c). */
/* A zeroed op of `kind`, or NULL when out of memory. */
struct sd_op *sd_op_new(enum sd_op_kind kind);
/* Grows op with room for the legacy-semantics dependencies of s (and `extra`), fills them,
 * and queues it. Returns the op's sequence number. Under sd_lock, which it lets go of only
 * when out of memory, to wait for the dependencies on the host. */
uint64_t sd_enqueue(struct sd_stream *s, struct sd_op *op, const struct sd_dep *extra);
/* Copies and sets up to this size are small work: a query may run them (sd_catch_up). */
#define SD_SMALL_WORK ((size_t)64 << 10)
/* Runs, on the calling thread, the small device work of s up to seq that was queued at least
 * the device's latency ago and that no one runs yet: a query then finds done what a GPU would
 * have finished by now, however late the scheduler runs the stream's worker. Under sd_lock,
 * which it lets go of while an op runs. */
void sd_catch_up(struct sd_stream *s, uint64_t seq);
/* Waits (releasing sd_lock) until s has completed seq. Under sd_lock. */
void sd_wait_seq(struct sd_stream *s, uint64_t seq);
/* Waits until every stream of d has passed what was queued at the call. Under sd_lock. */
void sd_wait_device(struct sd_device *d);
/* Creates a stream with a worker thread. Under sd_lock. */
int sd_stream_new(struct sd_device *d, enum sd_stream_kind kind, unsigned flags, int prio,
                  struct sd_stream **out);
/* Drops a reference to s; the last one keeps its object for a later stream. Under sd_lock. */
void sd_stream_unref(struct sd_stream *s);
/* Drops a reference to e; the last one frees it and drops its reference to its stream. Under
 * sd_lock. */
void sd_event_unref(struct sd_event *e);

/* Events (sd_event.c). */
/* True while the event's latest record is still queued. Under sd_lock. */
bool sd_event_pending(const struct sd_event *e);
/* Destroys every event of d (reset). Under sd_lock. */
void sd_events_drop_device(struct sd_device *d);

/* Op execution on a stream's worker (sd_exec.c). */
/* Runs an op's effect (memory ops, host functions). Called WITHOUT sd_lock. */
void sd_op_execute(struct sd_stream *s, struct sd_op *op);

/* Fault injection (SIMDEV_FAIL_*, SIMDEV_SYNC_DELAY_US). Each kind of call draws from its own
 * sequence fixed by SIMDEV_FAIL_SEED, so a single-threaded program fails the same calls on
 * every run. */
/* True when this allocation attempt on d is to fail with SD_ENOMEM; then counted in d's oom and
 * injected_faults. Call before anything changes. Under sd_lock. */
bool sd_inject_alloc(struct sd_device *d);
/* True when this event creation on d is to fail with SD_ENOMEM; then counted. Under sd_lock. */
bool sd_inject_event_create(struct sd_device *d);
/* True when this event record on d is to fail with SD_ENOMEM; then counted. Under sd_lock. */
bool sd_inject_event_record(struct sd_device *d);
/* Busy-waits SIMDEV_SYNC_DELAY_US after a host-side wait for the device. Without sd_lock. */
void sd_inject_sync_delay(void);

/* Monotonic time in seconds. */
double sd_now(void);
/* Busy-waits `us` microseconds, as a driver call costs CPU. */
void sd_spin_us(double us);
/* Busy-waits `us` microseconds as a driver call that allocates or maps memory does: one thread
 * at a time, as an H200 serves them (docs/gpu.md finding 17: as many pages a millisecond from
 * eight threads as from one). */
void sd_spin_serial_us(double us);
/* Busy-waits until `us` microseconds have passed since t0 (an sd_now() reading): a call priced
 * as a floor costs the larger of its price and what the simulator spent on it. */
void sd_price_floor(double t0, double us);

#endif
