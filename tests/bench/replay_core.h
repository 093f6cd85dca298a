/* Replay of an allocation trace through some allocator of CUDA device memory, shared by the
 * plain replay (cudaMalloc/cudaFree, with or without the preloaded cache) and the CUB one. */
#ifndef REPLAY_CORE_H
#define REPLAY_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct replay_allocator {
    const char *name;  /* printed as mode=; NULL: "cache" under the shim, else "plain" */
    void *ctx;
    /* cudaMalloc-like: 0 on success. */
    int (*alloc)(void *ctx, void **p, size_t size);
    /* cudaFree-like: 0 on success. */
    int (*free)(void *ctx, void *p);
    /* An option replay_main does not know: 0 when taken, -1 when bad. May be NULL. */
    int (*option)(void *ctx, const char *opt, const char *val);
    /* After the options, before the replay: 0 to go on. May be NULL. */
    int (*setup)(void *ctx);
    /* After the replay and the frees of what the trace left live. May be NULL. */
    void (*teardown)(void *ctx);
    const char *usage_extra;  /* appended to the usage line */
} replay_allocator;

/* Parse argv (TRACE.csv [--memset BYTES]), replay the trace through al, print key=value lines
 * on stdout. Exit status: 0 when every replayed call succeeded, 1 when one failed, 2 on bad
 * usage or an unreadable trace. */
int replay_main(int argc, char **argv, const replay_allocator *al);

#ifdef __cplusplus
}
#endif

#endif
