/* The reference cache of bench_loop (see sync_cache.h). Blocks are kept in one small table,
 * rounded up to whole MiB so that random sizes find each other again; a linear scan is cheap
 * at the handful of blocks the loops keep. */
#include "sync_cache.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define MiB ((size_t)1 << 20)

typedef struct entry {
    void *ptr;
    size_t size;     /* rounded */
    uint64_t stamp;  /* free counter at its last free */
    int live;
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *tab;
static size_t n, cap;
static uint64_t frees;   /* frees so far */
static uint64_t synced;  /* frees up to here are complete: a device sync began after them */

static size_t round_up(size_t size) { return (size + MiB - 1) / MiB * MiB; }

/* A free block of exactly size bytes, preferring one that needs no synchronization. */
static entry *find_free(size_t size)
{
    entry *any = NULL;
    for (size_t i = 0; i < n; i++) {
        if (tab[i].live || tab[i].size != size)
            continue;
        if (tab[i].stamp <= synced)
            return &tab[i];
        any = &tab[i];
    }
    return any;
}

static int add_entry(void *p, size_t size)
{
    if (n == cap) {
        size_t ncap = cap ? cap * 2 : 64;
        entry *t = realloc(tab, ncap * sizeof *t);
        if (!t)
            return -1;
        tab = t;
        cap = ncap;
    }
    tab[n++] = (entry){p, size, 0, 1};
    return 0;
}

int sync_cache_alloc(void **p, size_t size)
{
    size = round_up(size ? size : 1);
    pthread_mutex_lock(&lock);
    entry *e = find_free(size);
    if (e && e->stamp > synced) {
        /* Work queued before the free may still use it: wait for the whole device, unlocked,
         * then take whatever block is free and safe now. */
        uint64_t token = frees;
        e->live = 1; /* ours while we wait */
        pthread_mutex_unlock(&lock);
        cudaError_t rc = cudaDeviceSynchronize();
        pthread_mutex_lock(&lock);
        if (rc != cudaSuccess) {
            e->live = 0;
            pthread_mutex_unlock(&lock);
            return -1;
        }
        if (token > synced)
            synced = token;
    } else if (e) {
        e->live = 1;
    }
    if (e) {
        *p = e->ptr;
        pthread_mutex_unlock(&lock);
        return 0;
    }
    pthread_mutex_unlock(&lock);
    void *q = NULL;
    if (cudaMalloc(&q, size) != cudaSuccess)
        return -1;
    pthread_mutex_lock(&lock);
    int rc = add_entry(q, size);
    pthread_mutex_unlock(&lock);
    if (rc != 0) {
        cudaFree(q);
        return -1;
    }
    *p = q;
    return 0;
}

int sync_cache_free(void *p)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n; i++) {
        if (tab[i].ptr == p && tab[i].live) {
            tab[i].live = 0;
            tab[i].stamp = ++frees;
            pthread_mutex_unlock(&lock);
            return 0;
        }
    }
    pthread_mutex_unlock(&lock);
    return -1;
}

size_t sync_cache_reserved(void)
{
    size_t sum = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n; i++)
        sum += tab[i].size;
    pthread_mutex_unlock(&lock);
    return sum;
}

void sync_cache_release_all(void)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n; i++)
        cudaFree(tab[i].ptr);
    free(tab);
    tab = NULL;
    n = cap = 0;
    pthread_mutex_unlock(&lock);
}
