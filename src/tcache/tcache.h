/* Each thread's cache of blocks it allocated and then freed itself, in front of the device
 * pools (mimalloc's thread-local heaps). A hit takes no device lock and writes nothing that
 * another thread writes. Docs: docs/arena.md, "Thread caches".
 *
 * A kept block stays allocated in its device's books (its pool never sees it), so the pools,
 * the ladder and the fences need not know about thread caches; the statistics move what the
 * threads keep from allocated to cached (ca_tc_adjust_stats). This module never calls the
 * pools: blocks that must go back are handed to the caller, or at a thread's exit to the
 * arena's return_kept_list callback. */
#ifndef CACHEALLOC_TCACHE_H
#define CACHEALLOC_TCACHE_H

#include "block/heads.h"

#define CA_TC_KEPT 8                 /* blocks a thread keeps at once                  */
#define CA_TC_ISSUED 64              /* its recent allocations remembered (power of 2) */
#define CA_TC_MAX_BLOCK (8u << 20)   /* larger blocks go back to the pools at once     */

/* A block a thread allocated (issued) or freed and kept. 64 bytes, aligned so (an array of
 * them, or a cache, is allocated aligned): the hit path indexes entries by a shift. */
typedef struct __attribute__((aligned(64))) ca_tc_entry {
    ca_block *b;                     /* NULL: empty entry                               */
    uintptr_t addr;                  /* b's, as issued (b itself may be recycled since)  */
    size_t requested;
    ca_stream_t key;                 /* the allocation's stream; legacy for the plain API */
    ca_device *d;                    /* dev's, which lives as long as the arena          */
    uint32_t gen;                    /* b->gen when issued: any other free or allocation
                                      * of the block since changes it                    */
    uint32_t epoch;                  /* kept: the device's stream epoch at the free      */
    int16_t dev;
    uint8_t api;
    uint8_t is_kept;                 /* freed and kept, or issued                        */
} ca_tc_entry;

_Static_assert(sizeof(ca_tc_entry) == 64, "a thread cache entry is 64 bytes");

typedef struct ca_tcache ca_tcache;

/* The calling thread's cache of a, made now if it has none; NULL when a has no thread caches
 * or memory is short. The pointer stays valid on this thread until the retire hook runs. */
ca_tcache *ca_tc_thread_cache(ca_arena *a);

/* hook() runs on a thread just before one of its caches is freed (it exits, or a newer arena
 * takes the cache's index): whoever kept a pointer to it forgets it. Set once, early. */
void ca_tc_set_retire_hook(void (*hook)(void));

/* An allocation's one visit to the calling thread's cache, its kept blocks newest first (the
 * newest skipped when the inline hit tried it): -1 with *out set on a hit. On a miss the
 * thread's pattern changed: every block it keeps on dev moves to spill (room for CA_TC_KEPT),
 * for the caller to free through the pools, so that none sits idle there; returns how many.
 * A kept block serves only as ca_tc_serves allows (tcache/hit.h). */
int ca_tc_take(ca_arena *a, int dev, size_t size, ca_stream_t s, unsigned api, bool newest_tried,
               void **out, ca_tc_entry *spill);

/* Remember that the calling thread was handed b (gen: b->gen, read under the device lock). */
void ca_tc_issue(ca_arena *a, int dev, ca_block *b, uint32_t gen, size_t requested,
                 ca_stream_t s, unsigned api);

/* Whether ptr is a live block the calling thread was handed (and nobody freed since): true
 * with its device and requested size, without a device lock. */
bool ca_tc_issued(ca_arena *a, const void *ptr, int *dev, size_t *requested);

/* What ca_tc_keep did with a free. */
enum { CA_TC_NOT_KEPT = 0, CA_TC_KEPT_ONE = 1, CA_TC_KEPT_EVICTING = 2 };

/* Keep a block the calling thread allocated and now frees with the same API (and stream, for
 * the stream-ordered API). CA_TC_KEPT_EVICTING: the oldest kept block was pushed out; the
 * caller must take it with ca_tc_return_evicted and free it through the pools. *dev_out (may be
 * NULL) gets the block's device. */
int ca_tc_keep(ca_arena *a, void *ptr, ca_stream_t s, unsigned api, int *dev_out);

/* The block the calling thread's last ca_tc_keep pushed out. */
void ca_tc_return_evicted(ca_arena *a, ca_tc_entry *out);

/* Take every block the threads keep on device dev (dev < 0: all devices) out of their caches,
 * for the caller to free through the pools. Returns how many; *out is malloc'd (NULL when
 * none, or when memory is short: then nothing is taken). */
int ca_tc_return_all(ca_arena *a, int dev, ca_tc_entry **out);

/* Forget every kept and issued block of device dev (dev < 0: all) without freeing them: the
 * device was reset, or the process forked. */
void ca_tc_forget(ca_arena *a, int dev);

/* Move what the threads keep on dev from allocated to cached in st (a snapshot of the
 * device's own counters), and count their hits and frees. */
void ca_tc_adjust_stats(ca_arena *a, int dev, ca_dev_stats *st);

/* Assertion builds (ca_assert.h): stops the process unless e's block is the one the pools
 * issued: allocated in the books of e's device, at e's address, large enough for e's request
 * and small enough to be kept. A keep and a reissue check it (tcache/hit.h); the inline hit
 * reaches the block's private fields only through this call, and only in these builds. */
#ifdef CA_DEBUG
void ca_tc_check_block(const ca_tc_entry *e);
#else
static inline void ca_tc_check_block(const ca_tc_entry *e) { (void)e; }
#endif

/* In a forked child, where no other thread exists: every lock the parent's threads held is
 * free again. */
void ca_tc_fork_child(void);

/* The arena is going away: free every thread cache it has (their blocks with it). */
void ca_tc_arena_gone(ca_arena *a);

#endif
