/* The caching arena: a backend-neutral caching allocator of device memory.
 *
 * It knows nothing of CUDA or HIP. It reaches the device only through the backend table
 * (block/backend.h), so the same code runs in-process against a fake backend (tests/unit) and inside the
 * preloaded shim against the real CUDA or HIP runtime. docs/arena.md explains the algorithm.
 *
 * Streams are opaque keys (ca_stream_t). The arena passes them back to the backend unchanged
 * when it records an event or makes a stream wait, so the shim may encode pseudo-streams
 * (the per-thread default stream) in the key as it likes. CA_STREAM_LEGACY is the device's
 * legacy default stream. The types it shares with the libraries below it are in base/types.h.
 */
#ifndef CACHEALLOC_ARENA_H
#define CACHEALLOC_ARENA_H

#include "base/types.h"
#include "block/backend.h"

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
    /* The driver allocation holding it: a fixed segment's blocks may begin a little after its
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

/* Release every empty segment whose reuse is safe, and unmap every free page of the
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
