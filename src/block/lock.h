/* The device lock: a three-state futex lock (Drepper, "Futexes Are Tricky"). Uncontended it is
 * one compare-and-swap to take and one exchange to give back, a fraction of a pthread mutex's
 * path, which matters on the cache-hit path that takes it twice per malloc/free pair. */
#ifndef CACHEALLOC_BLOCK_LOCK_H
#define CACHEALLOC_BLOCK_LOCK_H

#include <stdint.h>

typedef struct ca_lock {
    uint32_t v; /* 0: free, 1: held, 2: held and someone may sleep on it */
} ca_lock;

#define CA_LOCK_INIT {0}

/* Contended paths, out of line. */
void ca_lock_wait(ca_lock *l, uint32_t seen);
void ca_lock_wake(ca_lock *l);

/* Sleep until *word no longer holds value (or a spurious wake-up); wake every sleeper. */
void ca_futex_wait(uint32_t *word, uint32_t value);
void ca_futex_wake_all(uint32_t *word);

/* Take the lock. */
static inline void ca_lock_acquire(ca_lock *l)
{
    uint32_t c = 0;
    if (!__atomic_compare_exchange_n(&l->v, &c, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        ca_lock_wait(l, c);
}

/* Give the lock back, waking one sleeper if there may be one. */
static inline void ca_lock_release(ca_lock *l)
{
    if (__atomic_exchange_n(&l->v, 0, __ATOMIC_RELEASE) == 2)
        ca_lock_wake(l);
}

#endif
