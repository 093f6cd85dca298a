/* Asking the other processes under the cache (same user, same API) for the memory their caches
 * hold free: the out-of-memory ladder's last rung. Part of the arena library. */
#ifndef CACHEALLOC_NEIGHBOURS_H
#define CACHEALLOC_NEIGHBOURS_H

#include <stdint.h>

/* How long an allocation waits for the neighbours' answers before it reports out-of-memory.
 * They answer as soon as their monitor thread is woken (a futex on their segment), after
 * their own device synchronization and frees; a capture under way there holds the answer
 * back to its end. docs/arena.md quotes what an answer costs. */
#define CA_NEIGHBOURS_WAIT_MS 1000u

/* Ask every neighbour to give back what its caches hold free, and wait at most wait_ms for
 * their answers: the bytes they report released (0: nobody asked, or nothing given). A
 * neighbour whose monitor thread has not beaten for a second (stopped, hung) is asked but not
 * waited for. One round at a time per process: a call while another thread's round is under
 * way waits for that round and answers its figure. Call with no lock of the arena held. */
uint64_t ca_neighbours_ask(const char *api, unsigned wait_ms);

/* In a forked child: no round is under way there. */
void ca_neighbours_after_fork(void);

#endif
