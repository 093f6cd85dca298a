/* The statistics writer: this process's shared-memory segment (stats/abi.h) and the monitor
 * thread that keeps it current and serves reclaim requests. Part of the arena library. */
#ifndef CACHEALLOC_STATS_WRITER_H
#define CACHEALLOC_STATS_WRITER_H

#include <stdint.h>

#include "base/types.h"
#include "stats/abi.h"

/* Where the numbers come from (the shim passes the arena). Callbacks run on the monitor thread
 * and on callers of ca_stats_publish; they must be thread-safe. mem_info (may be NULL) asks the
 * device itself: it is called on the monitor thread only, once a period for each device in
 * use, never by ca_stats_publish, so a program's own thread never pays for it. */
typedef struct ca_stats_source {
    void *ctx;
    int (*device_count)(void *ctx);                            /* device slots in use      */
    int (*read_device)(void *ctx, int dev, ca_dev_stats *out); /* 0 if dev unused          */
    uint64_t (*reclaim)(void *ctx, int dev);                   /* dev<0: all; bytes freed  */
    int (*mem_info)(void *ctx, int dev, uint64_t *free_bytes,
                    uint64_t *total_bytes);                     /* 0 on success             */
    void (*tick)(void *ctx); /* may be NULL: once a round, on the monitor thread only */
    int (*read_host)(void *ctx, ca_dev_stats *out); /* may be NULL; 0: no pinned pool yet */
    /* May be NULL. The device's UUID and PCI bus id as ca_stats_ident holds them ("" for a
     * name the driver does not give); 0 on success. Asked on the monitor thread, once a
     * device: a failure publishes both names empty. */
    int (*identify)(void *ctx, int dev, char uuid[CA_STATS_UUID_LEN],
                    char pci_bus_id[CA_STATS_PCI_LEN]);
} ca_stats_source;

/* What a source's reclaim answers when it cannot serve the request now (a stream capture is
 * under way): the request stays unanswered, and the monitor asks again at its next round. */
#define CA_STATS_RECLAIM_LATER UINT64_MAX

/* Create this process's segment and start the monitor thread; idempotent; 0 on success.
 * Calls the source once before returning: do not call it while holding a lock the source
 * takes. Honours CACHEALLOC_SHM_DIR (a directory to create the segment in, for tests). */
int ca_stats_start(const ca_stats_source *src, const char *api, const char *config_summary);

/* Publish now (also done by the monitor thread every 250 ms or so). */
void ca_stats_publish(void);

/* Writes where this process's segment is (or will be) as a file path; 0 on success. */
int ca_stats_path(char *buf, size_t len);

/* Remove the segment (also registered with atexit and at_quick_exit by ca_stats_start). */
void ca_stats_stop(void);

/* In a forked child: forget the parent's segment and thread without touching them. */
void ca_stats_forget_after_fork(void);

#endif
