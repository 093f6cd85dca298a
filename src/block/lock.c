#include "block/lock.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

static void futex(uint32_t *word, int op, uint32_t value)
{
    syscall(SYS_futex, word, op | FUTEX_PRIVATE_FLAG, value, NULL, NULL, 0);
}

void ca_lock_wait(ca_lock *l, uint32_t seen)
{
    /* Mark the lock contended, then sleep while it stays held. */
    if (seen != 2)
        seen = __atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE);
    while (seen != 0) {
        futex(&l->v, FUTEX_WAIT, 2);
        seen = __atomic_exchange_n(&l->v, 2, __ATOMIC_ACQUIRE);
    }
}

void ca_lock_wake(ca_lock *l) { futex(&l->v, FUTEX_WAKE, 1); }

void ca_futex_wait(uint32_t *word, uint32_t value) { futex(word, FUTEX_WAIT, value); }

void ca_futex_wake_all(uint32_t *word) { futex(word, FUTEX_WAKE, INT_MAX); }
