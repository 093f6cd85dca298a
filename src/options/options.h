/* CACHEALLOC_* environment options: one table, read once at start-up.
 *
 * A bad value never stops the program: one line on stderr names the variable, the value, what
 * is accepted and the default used instead. An unknown CACHEALLOC_* name gets one line with the
 * closest known name.
 */
#ifndef CACHEALLOC_OPTIONS_H
#define CACHEALLOC_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "base/types.h"

typedef enum ca_leak_mode { CA_LEAK_OFF = 0, CA_LEAK_ON = 1, CA_LEAK_STACKS = 2 } ca_leak_mode;

/* CACHEALLOC_EXPANDABLE unset or "auto": each door decides (ca_rt_expandable). */
#define CA_EXPANDABLE_AUTO (-1)
/* CACHEALLOC_REUSE unset or "auto": each door decides (ca_rt_reuse): sync for HIP, whose
 * header promises hipFree's synchronization, safe for CUDA. */
#define CA_REUSE_AUTO (-1)

typedef struct ca_options {
    ca_pool_kind pool;          /* CACHEALLOC_POOL=split|binned|none        (split)   */
    int reuse;                  /* CACHEALLOC_REUSE=auto|safe|sync|stream   (auto)    */
    ca_fences_kind fences;      /* CACHEALLOC_FENCES=auto|device|events     (auto)    */
    uint64_t limit_bytes;       /* CACHEALLOC_LIMIT=size or N%              (none: 0) */
    unsigned limit_percent;     /*   set instead of limit_bytes for "N%"              */
    uint64_t release_threshold; /* CACHEALLOC_RELEASE_THRESHOLD=size or N%  (UINT64_MAX: keep all) */
    unsigned release_percent;   /*   set instead for "N%"                             */
    uint64_t prealloc_bytes;    /* CACHEALLOC_PREALLOC=size                 (0)       */
    uint64_t max_split;         /* CACHEALLOC_MAX_SPLIT=size                (UINT64_MAX: split all) */
    int expandable;             /* CACHEALLOC_EXPANDABLE=auto|0|1           (auto)    */
    uint64_t expandable_piece;  /* CACHEALLOC_EXPANDABLE_PIECE=auto|size    (auto: 0) */
    int pinned;                 /* CACHEALLOC_PINNED=0|1                    (1)       */
    uint64_t pinned_limit;      /* CACHEALLOC_PINNED_LIMIT=size             (0: none) */
    int thread_cache;           /* CACHEALLOC_THREAD_CACHE=0|1              (1)       */
    unsigned reserve_factor;    /* CACHEALLOC_RESERVE_FACTOR=2|3|4|8|16     (2)       */
    int stats;                  /* CACHEALLOC_STATS=0|1                     (1)       */
    int neighbours;             /* CACHEALLOC_NEIGHBOURS=0|1                (1)       */
    uint64_t idle_release_s;    /* CACHEALLOC_IDLE_RELEASE=seconds          (10; 0: never) */
    ca_leak_mode leak_check;    /* CACHEALLOC_LEAK_CHECK=0|1|stacks         (0)       */
    char trace_path[4096];      /* CACHEALLOC_TRACE=FILE                    ("": off) */
    int verbose;                /* CACHEALLOC_VERBOSE=0|1                   (0)       */
} ca_options;

/* Fill o with every default. */
void ca_options_defaults(ca_options *o);

/* Parse the options from envp (a NULL-terminated "NAME=value" array, like environ), writing one
 * line per problem to err (may be NULL to stay silent). Returns the number of problems. */
int ca_options_parse(ca_options *o, char *const *envp, FILE *err);

/* Check one variable's value as ca_options_parse would, without parsing a whole environment:
 * 0 when accepted; else -1 with the value, why it is refused and what is accepted in why
 * ("'6Q' is not a size (accepted: ...)"). For callers that set the variables (the launcher). */
int ca_options_check(const char *name, const char *value, char *why, size_t len);

/* The i-th variable of the table (0, 1, ... in order): its name, what is accepted and its
 * default, as the warnings word them; -1 past the last. For the launcher's --help. */
int ca_options_entry(int i, const char **name, const char **accepted, const char **def);

/* Parse a size: "512", "64K", "8M", "6G", "1T" (powers of 1024, optional trailing "B" or
 * "iB", case-insensitive). Returns 0 on success. */
int ca_parse_size(const char *s, uint64_t *out);

/* Parse "N%" with 1 <= N <= 100. Returns 0 on success. */
int ca_parse_percent(const char *s, unsigned *out);

/* Blocks of 64 KiB or more start on a 64 KiB boundary: tools such as GDRCopy need it, where
 * cudaMalloc itself promises 256 bytes (and in practice 2 MiB for large requests). */
#define CA_BIG_ALIGN_DEFAULT ((size_t)64 << 10)

/* Fill an arena configuration from the options (reuse auto: safe; the shim sets each door's). */
void ca_options_to_config(const ca_options *o, ca_config *c);

/* Write "name=value" pairs of the options that differ from the default into buf (for the
 * stats header's configuration summary); always NUL-terminated. */
void ca_options_summary(const ca_options *o, char *buf, size_t len);

/* The same, with the pool, the reuse contract and the limit always named (for
 * CACHEALLOC_VERBOSE); always NUL-terminated. */
void ca_options_describe(const ca_options *o, char *buf, size_t len);

#endif
