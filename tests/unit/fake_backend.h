/* An in-process fake device for the arena's unit tests: a fake address space with injectable
 * out-of-memory, and streams whose work completes only when the test says so. */
#ifndef FAKE_BACKEND_H
#define FAKE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "arena/arena.h"

#define FAKE_MAX_STREAMS 16
#define FAKE_MAX_EVENTS 256
#define FAKE_MAX_RANGES 256
#define FAKE_MAX_HANDLES 8192
#define FAKE_PAGE ((size_t)2 << 20)

typedef struct fake_queue {
    ca_stream_t key;
    uint64_t enq;   /* work items enqueued so far */
    uint64_t done;  /* work items completed       */
} fake_queue;

typedef struct fake_event {
    int used;
    int recorded;
    int stream;     /* index into streams */
    uint64_t seq;
} fake_event;

/* Virtual memory (fake_vmm.c): a page of a reservation, mapped to a handle or not, and the last
 * work item that touched it. */
typedef struct fake_page {
    uint32_t handle;   /* 0: unmapped */
    uint8_t access;    /* read-write access set since it was mapped */
    uint64_t peers;    /* ordinals of other devices given read-write access */
    int8_t use_stream; /* -1: never used */
    uint64_t use_seq;
} fake_page;

typedef struct fake_range {
    uintptr_t base;
    size_t size;       /* 0: slot unused */
    fake_page *pages;
} fake_range;

typedef struct fake_handle {
    size_t size;
    uint32_t maps;
    uint8_t live, released;
} fake_handle;

typedef struct fake_device {
    uint64_t capacity;
    uint64_t used;
    uintptr_t next_addr;
    int fail_next_allocs;   /* inject: this many allocations fail first */
    size_t base_offset;     /* allocations start this far past a 1 MiB boundary (a runtime
                             * whose bases are aligned to less than the arena's blocks)  */
    /* Live allocations, to validate releases. */
    uintptr_t live_addr[4096];
    size_t live_size[4096];
    int nlive;
    uint64_t allocs, releases, device_syncs, event_syncs, records, queries, clears;
    uint64_t stream_queries;
    int record_fails_for;   /* stream index whose records fail (-1: none) */
    int query_error;        /* inject: every query of a recorded event answers an error */
    fake_queue streams[FAKE_MAX_STREAMS];
    int nstreams;
    fake_event events[FAKE_MAX_EVENTS];
    /* Run once, right after the next event or device synchronization, outside the fake's lock:
     * they stand in for another thread acting while the arena waits with its lock dropped. */
    void (*on_event_sync)(void);
    void (*on_device_sync)(void);
    /* Virtual memory: physical pages count in `used` from creation until released and unmapped. */
    fake_range ranges[FAKE_MAX_RANGES];
    fake_handle handles[FAKE_MAX_HANDLES];
    uintptr_t next_va;
    uint64_t mapped_bytes;
    uint64_t reserves, va_frees, vmm_creates, vmm_releases, maps, unmaps, unmap_calls, accesses;
    uint64_t peer_calls;
    int fail_next_creates;  /* inject: this many creations fail first */
    uint64_t fail_create_at; /* inject: the creation that would be number N fails (0: none) */
    uint64_t create_ns;      /* inject: each creation costs this long, busy (0: nothing)    */
    /* Broken rules: an access to an unmapped page, an unmap under running work, a reservation
     * freed with pages mapped. The first one is described. */
    uint64_t violations;
    char violation[160];
} fake_device;

/* Fill be with a backend over dev (one fake device for every device id). */
void fake_init(fake_device *dev, ca_backend *be, uint64_t capacity);

/* Index of the fake stream with key s, created on first use. */
int fake_stream(fake_device *dev, ca_stream_t s);

/* Enqueue one work item on s (it uses memory until completed). */
void fake_work(fake_device *dev, ca_stream_t s);

/* Complete every work item enqueued on s so far. */
void fake_complete(fake_device *dev, ca_stream_t s);

/* Complete all work on all streams. */
void fake_complete_all(fake_device *dev);

/* Whether a region freed when stream s had enqueued seq items is done on the device. */
int fake_done(fake_device *dev, ca_stream_t s, uint64_t seq);

/* Work items enqueued on s so far. */
uint64_t fake_enqueued(fake_device *dev, ca_stream_t s);

/* Enqueue one work item on s that uses [ptr, ptr+size): where that lies in a reservation, every
 * page must be mapped with access (else a violation), and no page may be unmapped before the
 * item completed. */
void fake_use(fake_device *dev, ca_stream_t s, const void *ptr, size_t size);

/* Whether every page of [ptr, ptr+size) is mapped with access (1), or ptr lies in no
 * reservation (-1), or some page is not (0). */
int fake_mapped(fake_device *dev, const void *ptr, size_t size);

/* fake_vmm.c's backend functions, for fake_init (called under the fake's lock). */
int fake_vmm_granularity_unlocked(void *ctx, int d, size_t *out);
int fake_vmm_reserve_unlocked(void *ctx, int d, size_t size, void **out);
int fake_vmm_free_unlocked(void *ctx, int d, void *base, size_t size);
int fake_vmm_create_unlocked(void *ctx, int d, size_t size, uint64_t *handle);
int fake_vmm_release_unlocked(void *ctx, int d, uint64_t handle);
int fake_vmm_map_unlocked(void *ctx, int d, void *addr, size_t size, uint64_t handle);
int fake_vmm_unmap_unlocked(void *ctx, int d, void *addr, size_t size);
int fake_vmm_set_access_unlocked(void *ctx, int d, void *addr, size_t size);
int fake_vmm_peer_access_unlocked(void *ctx, int d, void *addr, size_t size, int peer, bool on);
/* Whether every mapped page of [ptr, ptr+size) gives device `peer` access (0 for none mapped). */
int fake_peer_reaches(fake_device *dev, const void *ptr, size_t size, int peer);
void fake_use_unlocked(fake_device *dev, int stream, const void *ptr, size_t size);
int fake_mapped_unlocked(fake_device *dev, const void *ptr, size_t size);

#endif
