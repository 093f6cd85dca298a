/* The cache of page-locked host memory. One mutex: a pinned allocation is not a hot path (the
 * driver's own costs milliseconds), and the driver calls are made with it released, so that a
 * thread pinning a large block never holds up another one's cache hit. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/ca_assert.h"
#include "host/pool.h"

#define PAGE ((size_t)4096)
#define CLASSES 64

typedef struct host_block {
    uintptr_t addr;
    size_t size;      /* what the driver pinned */
    size_t requested; /* what the program asked for, while live */
    unsigned flags;
    void *owner;      /* the backend's name of what the block belongs to (alloc's) */
    bool live;
    bool exact;       /* pinned at the size asked, off the classes: never cached */
    bool orphan;      /* its owner is gone, and its memory with it: never cached */
    struct host_block *next_free;
} host_block;

struct ca_host_pool {
    ca_host_backend be;
    ca_host_config cfg;
    pthread_mutex_t lock;
    host_block **by_addr; /* every block held, sorted by address */
    size_t n, cap;
    host_block *free_list[CLASSES]; /* cached blocks by log2 of their size */
    ca_host_stats st;
};

static void trace(const ca_host_pool *hp, ca_trace_kind kind, uintptr_t p, size_t size)
{
    if (hp->cfg.trace)
        hp->cfg.trace(hp->cfg.trace_ctx, kind, -1, (const void *)p, size, NULL);
}

size_t ca_host_class_size(size_t size)
{
    size_t c = PAGE;
    while (c < size && c <= SIZE_MAX / 2)
        c <<= 1;
    return c < size ? size : c;
}

static int class_of(size_t size)
{
    int k = 0;
    while (k < CLASSES - 1 && ((size_t)1 << (k + 1)) <= size)
        k++;
    return k;
}

ca_host_pool *ca_host_pool_create(const ca_host_backend *be, const ca_host_config *cfg)
{
    ca_host_pool *hp = calloc(1, sizeof *hp);
    if (!hp)
        return NULL;
    hp->be = *be;
    if (cfg)
        hp->cfg = *cfg;
    pthread_mutex_init(&hp->lock, NULL);
    return hp;
}

/* Index of the first block at or above addr. */
static size_t lower(const ca_host_pool *hp, uintptr_t addr)
{
    size_t lo = 0, hi = hp->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (hp->by_addr[mid]->addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The block holding addr, or NULL. */
static host_block *holding(const ca_host_pool *hp, uintptr_t addr)
{
    size_t i = lower(hp, addr);
    if (i < hp->n && hp->by_addr[i]->addr == addr)
        return hp->by_addr[i];
    if (i == 0)
        return NULL;
    host_block *b = hp->by_addr[i - 1];
    return addr - b->addr < b->size ? b : NULL;
}

static bool insert(ca_host_pool *hp, host_block *b)
{
    if (hp->n == hp->cap) {
        size_t cap = hp->cap ? 2 * hp->cap : 16;
        host_block **v = realloc(hp->by_addr, cap * sizeof *v);
        if (!v)
            return false;
        hp->by_addr = v;
        hp->cap = cap;
    }
    size_t i = lower(hp, b->addr);
    memmove(&hp->by_addr[i + 1], &hp->by_addr[i], (hp->n - i) * sizeof *hp->by_addr);
    hp->by_addr[i] = b;
    hp->n++;
    return true;
}

static void remove_block(ca_host_pool *hp, host_block *b)
{
    size_t i = lower(hp, b->addr);
    ca_assert(i < hp->n && hp->by_addr[i] == b);
    memmove(&hp->by_addr[i], &hp->by_addr[i + 1], (hp->n - i - 1) * sizeof *hp->by_addr);
    hp->n--;
}

/* A cached block of exactly this size and flags, taken off its list. Under the lock. */
static host_block *take_cached(ca_host_pool *hp, size_t size, unsigned flags)
{
    for (host_block **at = &hp->free_list[class_of(size)]; *at; at = &(*at)->next_free)
        if ((*at)->flags == flags && (*at)->size == size) {
            host_block *b = *at;
            *at = b->next_free;
            b->next_free = NULL;
            hp->st.cached_bytes -= b->size;
            return b;
        }
    return NULL;
}

/* Takes cached blocks off the pool, largest classes first, until at most keep bytes stay
 * cached; they come back as a list for the caller to unpin without the lock. Under it. */
static host_block *collect_cached(ca_host_pool *hp, uint64_t keep)
{
    host_block *out = NULL;
    for (int k = CLASSES - 1; k >= 0 && hp->st.cached_bytes > keep; k--)
        while (hp->free_list[k] && hp->st.cached_bytes > keep) {
            host_block *b = hp->free_list[k];
            hp->free_list[k] = b->next_free;
            hp->st.cached_bytes -= b->size;
            remove_block(hp, b);
            b->next_free = out;
            out = b;
        }
    return out;
}

/* Unpins a list collect_cached made; the bytes unpinned, and *rc the last release's status
 * (rc may be NULL). Without the lock. */
static uint64_t unpin_all(ca_host_pool *hp, host_block *list, int *rc)
{
    uint64_t bytes = 0, calls = 0;
    while (list) {
        host_block *b = list;
        list = b->next_free;
        int released = hp->be.release(hp->be.ctx, (void *)b->addr);
        if (released == CA_OK) {
            trace(hp, CA_TRACE_HOST_UNPIN, b->addr, b->size);
            bytes += b->size;
            calls++;
        }
        if (rc)
            *rc = released;
        free(b);
    }
    if (calls) {
        pthread_mutex_lock(&hp->lock);
        hp->st.driver_free_calls += calls;
        pthread_mutex_unlock(&hp->lock);
    }
    return bytes;
}

/* Pins a new block: the class size, then, after unpinning everything cached, again, and last
 * the size asked itself (a power of two may pass a locked-memory limit the request fits). */
static int pin(ca_host_pool *hp, size_t size, size_t cls, unsigned flags, host_block **out)
{
    void *p = NULL, *owner = NULL;
    size_t got = cls;
    int rc = hp->be.alloc(hp->be.ctx, cls, flags, &p, &owner);
    bool rescued = false;
    if (rc == CA_ERR_OOM) {
        pthread_mutex_lock(&hp->lock);
        host_block *list = collect_cached(hp, 0);
        pthread_mutex_unlock(&hp->lock);
        if (list) {
            unpin_all(hp, list, NULL);
            rc = hp->be.alloc(hp->be.ctx, cls, flags, &p, &owner);
            rescued = rc == CA_OK;
        }
    }
    size_t exact = (size + PAGE - 1) / PAGE * PAGE;
    if (rc == CA_ERR_OOM && exact < cls) {
        got = exact;
        rc = hp->be.alloc(hp->be.ctx, exact, flags, &p, &owner);
        rescued = rc == CA_OK;
    }
    if (rc != CA_OK)
        return rc;
    host_block *b = calloc(1, sizeof *b);
    if (!b) {
        hp->be.release(hp->be.ctx, p);
        return CA_ERR_OOM;
    }
    trace(hp, CA_TRACE_HOST_PIN, (uintptr_t)p, got);
    *b = (host_block){
        .addr = (uintptr_t)p, .size = got, .flags = flags, .owner = owner, .exact = got != cls};
    if (rescued) {
        pthread_mutex_lock(&hp->lock);
        hp->st.oom_recoveries++;
        pthread_mutex_unlock(&hp->lock);
    }
    *out = b;
    return CA_OK;
}

/* b becomes the program's. Under the lock. */
static void hand_out(ca_host_pool *hp, host_block *b, size_t size)
{
    b->live = true;
    b->requested = size;
    hp->st.live_bytes += b->size;
    hp->st.requested_bytes += size;
    hp->st.alloc_calls++;
    if (hp->st.live_bytes > hp->st.peak_live_bytes)
        hp->st.peak_live_bytes = hp->st.live_bytes;
    uint64_t held = hp->st.live_bytes + hp->st.cached_bytes + hp->st.waiting_bytes;
    if (held > hp->st.peak_bytes)
        hp->st.peak_bytes = held;
    trace(hp, CA_TRACE_HOST_ALLOC, b->addr, size);
}

static int refused(ca_host_pool *hp, int rc)
{
    pthread_mutex_lock(&hp->lock);
    hp->st.oom_failures += rc == CA_ERR_OOM;
    pthread_mutex_unlock(&hp->lock);
    return rc;
}

int ca_host_malloc(ca_host_pool *hp, size_t size, unsigned flags, void **out)
{
    if (!out || size == 0)
        return CA_ERR_INVALID;
    size_t cls = ca_host_class_size(size);
    pthread_mutex_lock(&hp->lock);
    host_block *b = take_cached(hp, cls, flags);
    host_block *excess = NULL;
    if (!b && hp->cfg.limit_bytes) {
        /* Over the limit with this block: what is cached goes first. */
        uint64_t live = hp->st.live_bytes + hp->st.waiting_bytes;
        if (live + cls > hp->cfg.limit_bytes) {
            hp->st.oom_failures++;
            pthread_mutex_unlock(&hp->lock);
            return CA_ERR_OOM;
        }
        uint64_t room = hp->cfg.limit_bytes - live - cls;
        excess = collect_cached(hp, room);
    }
    if (b) {
        hp->st.hits++;
        hand_out(hp, b, size);
        pthread_mutex_unlock(&hp->lock);
        *out = (void *)b->addr;
        return CA_OK;
    }
    pthread_mutex_unlock(&hp->lock);
    unpin_all(hp, excess, NULL);
    int rc = pin(hp, size, cls, flags, &b);
    if (rc != CA_OK)
        return refused(hp, rc);
    pthread_mutex_lock(&hp->lock);
    if (!insert(hp, b)) {
        hp->st.driver_alloc_calls++; /* pinned, and unpinned below: both counted */
        pthread_mutex_unlock(&hp->lock);
        b->next_free = NULL;
        unpin_all(hp, b, NULL);
        return refused(hp, CA_ERR_OOM);
    }
    hp->st.driver_alloc_calls++;
    hand_out(hp, b, size);
    pthread_mutex_unlock(&hp->lock);
    *out = (void *)b->addr;
    return CA_OK;
}

int ca_host_free(ca_host_pool *hp, void *p)
{
    pthread_mutex_lock(&hp->lock);
    host_block *b = holding(hp, (uintptr_t)p);
    if (!b || b->addr != (uintptr_t)p || !b->live) {
        hp->st.invalid_frees += b != NULL;
        pthread_mutex_unlock(&hp->lock);
        return b ? CA_ERR_INVALID : CA_ERR_NOT_OURS;
    }
    b->live = false; /* a second free of it is refused from here on */
    ca_assert(hp->st.live_bytes >= b->size && hp->st.requested_bytes >= b->requested);
    hp->st.live_bytes -= b->size;
    hp->st.requested_bytes -= b->requested;
    hp->st.waiting_bytes += b->size;
    hp->st.free_calls++;
    hp->st.waits += !b->orphan;
    bool orphan = b->orphan;
    void *owner = b->owner;
    trace(hp, CA_TRACE_HOST_FREE, b->addr, b->requested);
    pthread_mutex_unlock(&hp->lock);
    /* The driver's free waits for the device: a program may free a buffer right after queueing
     * an asynchronous copy from it, and may count on the wait itself. An orphan's work went
     * with its owner. */
    int rc = orphan ? CA_OK : hp->be.wait(hp->be.ctx, owner);
    pthread_mutex_lock(&hp->lock);
    hp->st.waiting_bytes -= b->size;
    orphan = b->orphan; /* its owner may have gone during the wait */
    if (rc != CA_OK || b->exact || orphan) {
        remove_block(hp, b);
        pthread_mutex_unlock(&hp->lock);
        b->next_free = NULL;
        int released = CA_OK;
        unpin_all(hp, b, &released);
        /* An orphan is the driver's to free: its answer is the program's, as without the
         * cache (the memory may be gone already). */
        return orphan && rc == CA_OK ? released : rc;
    }
    int k = class_of(b->size);
    b->next_free = hp->free_list[k];
    hp->free_list[k] = b;
    hp->st.cached_bytes += b->size;
    pthread_mutex_unlock(&hp->lock);
    return CA_OK;
}

bool ca_host_locate(ca_host_pool *hp, const void *p, uintptr_t *start, size_t *size)
{
    pthread_mutex_lock(&hp->lock);
    host_block *b = holding(hp, (uintptr_t)p);
    bool found = b && b->live && (uintptr_t)p - b->addr < b->requested;
    if (found) {
        *start = b->addr;
        *size = b->requested;
    }
    pthread_mutex_unlock(&hp->lock);
    return found;
}

void ca_host_forget_owner(ca_host_pool *hp, void *owner)
{
    if (!owner)
        return;
    host_block *list = NULL;
    pthread_mutex_lock(&hp->lock);
    for (int k = 0; k < CLASSES; k++)
        for (host_block **at = &hp->free_list[k]; *at;) {
            host_block *b = *at;
            if (b->owner != owner) {
                at = &b->next_free;
                continue;
            }
            *at = b->next_free;
            hp->st.cached_bytes -= b->size;
            remove_block(hp, b);
            b->next_free = list;
            list = b;
        }
    /* Live and waiting blocks: their frees go to the driver. */
    for (size_t i = 0; i < hp->n; i++)
        if (hp->by_addr[i]->owner == owner)
            hp->by_addr[i]->orphan = true;
    pthread_mutex_unlock(&hp->lock);
    unpin_all(hp, list, NULL);
}

uint64_t ca_host_trim(ca_host_pool *hp, uint64_t keep)
{
    pthread_mutex_lock(&hp->lock);
    host_block *list = collect_cached(hp, keep);
    pthread_mutex_unlock(&hp->lock);
    return unpin_all(hp, list, NULL);
}

void ca_host_get_stats(ca_host_pool *hp, ca_host_stats *out)
{
    pthread_mutex_lock(&hp->lock);
    *out = hp->st;
    out->blocks = hp->n;
    pthread_mutex_unlock(&hp->lock);
}

void ca_host_get_dev_stats(ca_host_pool *hp, ca_dev_stats *out)
{
    ca_host_stats st;
    uint64_t largest = 0;
    pthread_mutex_lock(&hp->lock);
    st = hp->st;
    st.blocks = hp->n;
    for (int k = CLASSES - 1; k >= 0 && !largest; k--)
        for (host_block *b = hp->free_list[k]; b; b = b->next_free)
            largest = b->size > largest ? b->size : largest;
    pthread_mutex_unlock(&hp->lock);
    *out = (ca_dev_stats){
        .reserved_bytes = st.live_bytes + st.cached_bytes + st.waiting_bytes,
        .allocated_bytes = st.live_bytes,
        .cached_bytes = st.cached_bytes,
        .pending_bytes = st.waiting_bytes,
        .requested_bytes = st.requested_bytes,
        .peak_reserved_bytes = st.peak_bytes,
        .peak_allocated_bytes = st.peak_live_bytes,
        .alloc_calls = st.alloc_calls,
        .free_calls = st.free_calls,
        .cache_hits = st.hits,
        .driver_alloc_calls = st.driver_alloc_calls,
        .driver_free_calls = st.driver_free_calls,
        .device_syncs = st.waits,
        .oom_recoveries = st.oom_recoveries,
        .oom_failures = st.oom_failures,
        .invalid_frees = st.invalid_frees,
        .segments = st.blocks,
        .largest_free_block = largest,
    };
}

void ca_host_foreach_live(ca_host_pool *hp, void (*fn)(void *ctx, const void *p, size_t size),
                          void *ctx)
{
    pthread_mutex_lock(&hp->lock);
    for (size_t i = 0; i < hp->n; i++)
        if (hp->by_addr[i]->live)
            fn(ctx, (const void *)hp->by_addr[i]->addr, hp->by_addr[i]->requested);
    pthread_mutex_unlock(&hp->lock);
}

void ca_host_pool_destroy(ca_host_pool *hp)
{
    if (!hp)
        return;
    ca_host_trim(hp, 0);
    for (size_t i = 0; i < hp->n; i++)
        free(hp->by_addr[i]);
    free(hp->by_addr);
    pthread_mutex_destroy(&hp->lock);
    free(hp);
}
