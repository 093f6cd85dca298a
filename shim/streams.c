/* Stream keys: the table of streams the shim knows, and the per-thread default stream keys. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "process.h"
#include "lane.h"
#include "streams.h"

/* Streams created through the shim (or first met in an async call): handle -> device.
 * Open addressing with linear probing and backward-shift deletion; read-mostly. */
struct known {
    void *handle;
    int dev;
};

static pthread_rwlock_t known_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct known *known_tab;
static size_t known_cap; /* power of two, or 0 */
static size_t known_count;

/* Each thread remembers the last stream it looked up, valid while known_gen is unchanged: a
 * loop on one stream then reads no shared lock (every reader of a rwlock writes to it). Any
 * change to the table bumps the generation, so a handle destroyed and reused for another
 * stream is looked up again. */
static atomic_uint_fast64_t known_gen = 1;
static _Thread_local struct known tl_known;
static _Thread_local uint_fast64_t tl_known_gen;

/* Caller holds known_lock for writing, and has just changed the table. */
static void known_changed(void)
{
    atomic_fetch_add_explicit(&known_gen, 1, memory_order_release);
    ca_lane_invalidate(); /* lanes remember a stream's key and device */
}

static size_t entry_of(const void *h, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)h;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

/* Index of h, or (size_t)-1. Caller holds known_lock. */
static size_t known_find(const void *h)
{
    if (known_cap == 0)
        return (size_t)-1;
    for (size_t i = entry_of(h, known_cap);; i = (i + 1) & (known_cap - 1)) {
        if (known_tab[i].handle == h)
            return i;
        if (known_tab[i].handle == NULL)
            return (size_t)-1;
    }
}

/* Caller holds known_lock for writing. On allocation failure the stream stays unknown: it is
 * then told to the arena again at its next use, which is harmless. */
static void known_put(void *h, int dev)
{
    size_t i = known_find(h);
    known_changed();
    if (i != (size_t)-1) {
        known_tab[i].dev = dev;
        return;
    }
    if ((known_count + 1) * 2 > known_cap) {
        size_t ncap = known_cap ? known_cap * 2 : 64;
        struct known *n = calloc(ncap, sizeof *n);
        if (n == NULL)
            return;
        for (size_t j = 0; j < known_cap; j++) {
            if (known_tab[j].handle == NULL)
                continue;
            size_t k = entry_of(known_tab[j].handle, ncap);
            while (n[k].handle != NULL)
                k = (k + 1) & (ncap - 1);
            n[k] = known_tab[j];
        }
        free(known_tab);
        known_tab = n;
        known_cap = ncap;
    }
    i = entry_of(h, known_cap);
    while (known_tab[i].handle != NULL)
        i = (i + 1) & (known_cap - 1);
    known_tab[i].handle = h;
    known_tab[i].dev = dev;
    known_count++;
}

/* Caller holds known_lock for writing. */
static void known_del_at(size_t i)
{
    size_t mask = known_cap - 1;
    known_changed();
    known_tab[i].handle = NULL;
    known_count--;
    /* Backward shift: pull later members of the probe run into the hole. */
    for (size_t j = (i + 1) & mask; known_tab[j].handle != NULL; j = (j + 1) & mask) {
        size_t home = entry_of(known_tab[j].handle, known_cap);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            known_tab[i] = known_tab[j];
            known_tab[j].handle = NULL;
            i = j;
        }
    }
}

/* Per-thread default stream keys. A device's epoch invalidates every thread's "seen" bit for
 * that device at once (device reset; every device at fork) without touching other threads'
 * storage, and leaves the other devices' bits valid. */
static atomic_uint_fast64_t next_thread_id = 1;
static atomic_uint dev_epoch[CA_MAX_DEVICES];

struct per_thread {
    uint64_t id;                      /* 0: no key yet */
    uint64_t plain_id;                /* 0: no plain call yet (ca_stream_plain_thread) */
    uint64_t seen[CA_RT_COUNT];       /* devices where the arena was told about this key */
    uint64_t plain[CA_RT_COUNT];      /* devices where this thread's plain calls were counted */
    unsigned epoch[CA_MAX_DEVICES];   /* dev_epoch[dev] when the seen bits of dev were set */
};
static _Thread_local struct per_thread tl;

static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static ca_stream_t thread_key(void)
{
    return (ca_stream_t)(uintptr_t)((tl.id << 1) | 1u);
}

/* At thread exit its per-thread stream is gone for good: hand its pool to the device, as for
 * a destroyed stream, so that a later thread never reuses its blocks without an event. A
 * device reset since the thread's last use of a device made the arena forget that device's
 * pools already. */
static void thread_exit(void *unused)
{
    (void)unused;
    ca_lane_disarm(); /* a later destructor's call must tell the arena about its key again */
    for (int i = 0; i < CA_RT_COUNT; i++) {
        ca_runtime *rt = ca_runtime_by_index(i);
        if (rt == NULL || !atomic_load_explicit(&rt->ready, memory_order_acquire))
            continue;
        for (int dev = 0; dev < CA_MAX_DEVICES; dev++)
            if ((tl.seen[i] & (UINT64_C(1) << dev)) &&
                tl.epoch[dev] == atomic_load(&dev_epoch[dev]))
                ca_stream_destroyed(rt->arena, dev, thread_key());
        tl.seen[i] = 0;
    }
}

static void make_exit_key(void)
{
    if (pthread_key_create(&exit_key, thread_exit) != 0)
        exit_key = (pthread_key_t)-1;
}

/* A device reset since this thread last looked at dev: its bits for dev are stale. */
static void refresh_epoch(int dev)
{
    unsigned epoch = atomic_load(&dev_epoch[dev]);
    if (tl.epoch[dev] != epoch) {
        uint64_t bit = UINT64_C(1) << dev;
        for (int s = 0; s < CA_RT_COUNT; s++) {
            tl.seen[s] &= ~bit;
            tl.plain[s] &= ~bit;
        }
        tl.epoch[dev] = epoch;
    }
}

/* The first host thread that made a plain call on each device, by runtime index (0: none). */
static atomic_uint_fast64_t plain_owner[CA_RT_COUNT][CA_MAX_DEVICES];

int ca_stream_plain_counted(const ca_runtime *rt)
{
    return tl.plain[rt->index] != 0;
}

/* ca_stream_plain_thread for a device this thread's plain calls were not counted on yet. */
static CA_COLD void plain_thread_first(ca_runtime *rt, int dev, uint64_t bit)
{
    refresh_epoch(dev);
    if (tl.plain_id == 0)
        tl.plain_id = atomic_fetch_add(&next_thread_id, 1);
    uint_fast64_t owner = 0;
    if (!atomic_compare_exchange_strong(&plain_owner[rt->index][dev], &owner, tl.plain_id) &&
        owner != tl.plain_id)
        /* a second thread: leave single-stream mode */
        ca_stream_seen(rt->arena, dev, CA_STREAM_LEGACY);
    tl.plain[rt->index] |= bit;
}

void ca_stream_plain_thread(ca_runtime *rt, int dev)
{
    uint64_t bit = UINT64_C(1) << dev;
    if (!(tl.plain[rt->index] & bit) ||
        tl.epoch[dev] != atomic_load_explicit(&dev_epoch[dev], memory_order_acquire))
        plain_thread_first(rt, dev, bit);
}

static ca_stream_t per_thread_key(ca_runtime *rt, int dev)
{
    if (tl.id == 0) {
        tl.id = atomic_fetch_add(&next_thread_id, 1);
        pthread_once(&exit_key_once, make_exit_key);
        if (exit_key != (pthread_key_t)-1)
            pthread_setspecific(exit_key, &tl);
    }
    uint64_t bit = UINT64_C(1) << dev;
    refresh_epoch(dev);
    if (!(tl.seen[rt->index] & bit)) {
        tl.seen[rt->index] |= bit;
        ca_stream_seen(rt->arena, dev, thread_key());
    }
    return thread_key();
}

int ca_stream_nameable(ca_stream_t key)
{
    if (!((uintptr_t)key & 1u))
        return 1;
    return tl.id != 0 && key == thread_key();
}

/* First use of a handle the shim never saw (created through the driver API, another copy of
 * the runtime, or no stream at all: destroyed, bogus). The real runtime validates it; a valid
 * one is registered with its real flags on the caller's current device, the best guess of its
 * device. */
static ca_rt_err meet_stream(ca_runtime *rt, void *stream, int dev)
{
    unsigned flags = 0;
    int nonblocking = 0;
    if (rt->fn.stream_get_flags != NULL) {
        ca_rt_err e = rt->fn.stream_get_flags(stream, &flags);
        if (e != rt->codes.success)
            return e;
        nonblocking = (flags & rt->stream_nonblocking) != 0;
    }
    pthread_rwlock_wrlock(&known_lock);
    int fresh = known_find(stream) == (size_t)-1;
    if (fresh)
        known_put(stream, dev);
    pthread_rwlock_unlock(&known_lock);
    if (!fresh)
        return rt->codes.success;
    if (rt->fn.stream_get_flags != NULL)
        ca_stream_created(rt->arena, dev, stream, nonblocking);
    else
        ca_stream_seen(rt->arena, dev, stream);
    return rt->codes.success;
}

/* ca_stream_key for a handle this thread did not look up last: out of line, so that a hit in
 * ca_stream_key saves no registers. */
static CA_NOINLINE ca_rt_err known_key(ca_runtime *rt, void *stream,
                                                     uint_fast64_t gen, int *dev)
{
    pthread_rwlock_rdlock(&known_lock);
    size_t i = known_find(stream);
    int known_dev = i != (size_t)-1 ? known_tab[i].dev : -1;
    pthread_rwlock_unlock(&known_lock);
    if (known_dev >= 0) {
        /* gen was read before the lookup: a change since makes the next call look again. */
        tl_known = (struct known){stream, known_dev};
        tl_known_gen = gen;
        *dev = known_dev;
        return rt->codes.success;
    }
    return meet_stream(rt, stream, *dev);
}

ca_rt_err ca_stream_key(ca_runtime *rt, void *stream, int ptsz, int *dev, ca_stream_t *key)
{
    if (stream == NULL) {
        *key = ptsz ? per_thread_key(rt, *dev) : CA_STREAM_LEGACY;
        return rt->codes.success;
    }
    if (stream == rt->legacy_stream) {
        *key = CA_STREAM_LEGACY;
        return rt->codes.success;
    }
    if (stream == rt->per_thread_stream) {
        *key = per_thread_key(rt, *dev);
        return rt->codes.success;
    }
    *key = stream;
    uint_fast64_t gen = atomic_load_explicit(&known_gen, memory_order_acquire);
    if (tl_known.handle == stream && tl_known_gen == gen) {
        *dev = tl_known.dev;
        return rt->codes.success;
    }
    return known_key(rt, stream, gen, dev);
}

void *ca_stream_handle(const ca_runtime *rt, ca_stream_t key)
{
    if (key == CA_STREAM_LEGACY)
        return rt->legacy_stream;
    if ((uintptr_t)key & 1u)
        return rt->per_thread_stream;
    return key;
}

void ca_stream_register(ca_runtime *rt, void *stream, int dev, int nonblocking)
{
    pthread_rwlock_wrlock(&known_lock);
    known_put(stream, dev);
    pthread_rwlock_unlock(&known_lock);
    ca_stream_created(rt->arena, dev, stream, nonblocking);
}

void ca_stream_unregister(ca_runtime *rt, void *stream)
{
    if (stream == NULL || stream == rt->legacy_stream || stream == rt->per_thread_stream)
        return;
    int dev = -1;
    pthread_rwlock_wrlock(&known_lock);
    size_t i = known_find(stream);
    if (i != (size_t)-1) {
        dev = known_tab[i].dev;
        known_del_at(i);
    }
    pthread_rwlock_unlock(&known_lock);
    if (dev >= 0)
        ca_stream_destroyed(rt->arena, dev, stream);
}

void ca_streams_after_fork(void)
{
    /* Another thread may have held the lock at fork; it does not exist in the child. */
    pthread_rwlock_t fresh = PTHREAD_RWLOCK_INITIALIZER;
    known_lock = fresh;
    ca_streams_forget(-1);
}

void ca_streams_forget(int dev)
{
    pthread_rwlock_wrlock(&known_lock);
    known_changed();
    if (dev < 0) {
        for (size_t i = 0; i < known_cap; i++)
            known_tab[i].handle = NULL;
        known_count = 0;
    } else {
        /* Deleting shifts entries backwards, so rescan an entry after a deletion. */
        for (size_t i = 0; i < known_cap;) {
            if (known_tab[i].handle != NULL && known_tab[i].dev == dev)
                known_del_at(i);
            else
                i++;
        }
    }
    pthread_rwlock_unlock(&known_lock);
    for (int d = 0; d < CA_MAX_DEVICES; d++)
        if (dev < 0 || d == dev) {
            for (int s = 0; s < CA_RT_COUNT; s++)
                atomic_store(&plain_owner[s][d], 0);
            atomic_fetch_add(&dev_epoch[d], 1);
        }
    ca_lane_invalidate(); /* lanes were armed with the threads' plain calls counted */
}
