/* An in-process fake device for the arena's unit tests: a fake address space with injectable
 * out-of-memory, and streams whose work completes only when the test says so. */
#ifndef FAKE_BACKEND_H
#define FAKE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "arena.h"

#define FAKE_MAX_STREAMS 16
#define FAKE_MAX_EVENTS 256

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

typedef struct fake_device {
    uint64_t capacity;
    uint64_t used;
    uintptr_t next_addr;
    int fail_next_allocs;   /* inject: this many allocations fail first */
    /* Live allocations, to validate releases. */
    uintptr_t live_addr[4096];
    size_t live_size[4096];
    int nlive;
    uint64_t allocs, releases, device_syncs, event_syncs, records, queries, clears;
    int record_fails_for;   /* stream index whose records fail (-1: none) */
    int query_error;        /* inject: every query of a recorded event answers an error */
    fake_queue streams[FAKE_MAX_STREAMS];
    int nstreams;
    fake_event events[FAKE_MAX_EVENTS];
    /* Run once, right after the next event or device synchronization, outside the fake's lock:
     * they stand in for another thread acting while the arena waits with its lock dropped. */
    void (*on_event_sync)(void);
    void (*on_device_sync)(void);
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

#endif
