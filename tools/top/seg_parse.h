/* Parsing one statistics segment from a private copy: validates everything before trusting it.
 * Pure (no I/O), so the fuzz target links it alone. */
#ifndef CACHEALLOC_TOP_SEG_PARSE_H
#define CACHEALLOC_TOP_SEG_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "stats/abi.h"

typedef struct top_dev {
    uint32_t device;
    ca_stats_values v;
    int has_mem;            /* the writer published the device's memory (ABI version 2) */
    uint64_t mem_total;     /* as the driver reported it to the process; 0 without      */
    uint64_t mem_free;
    uint64_t given;         /* released at neighbours' requests (ABI version 3; 0 before) */
    int has_waits;          /* the writer published w (ABI version 5)                    */
    ca_stats_waits w;       /* the time the cache's own waits cost; 0 without            */
    char uuid[CA_STATS_UUID_LEN];      /* as the driver names the device; "" unknown (v4)  */
    char pci_bus_id[CA_STATS_PCI_LEN]; /* likewise                                        */
    int named;              /* the names are final: asked of the driver, or never will be   */
} top_dev;

/* What a reader knows of one process: header strings sanitized to printable ASCII. */
typedef struct top_proc {
    int pid;
    unsigned uid;
    uint64_t start_time;
    uint64_t heartbeat_ns;
    uint64_t publish_count;
    unsigned abi_version;
    char api[CA_STATS_API_LEN];
    char config[CA_STATS_CONFIG_LEN];
    char cmdline[CA_STATS_CMDLINE_LEN];
    unsigned ndev;          /* published records in use, in device order */
    unsigned nbusy;         /* records skipped: the writer was inside them */
    top_dev *dev;           /* ndev entries (malloc'd; top_proc_clear frees) */
    int has_host;           /* the process pins host memory through the cache (ABI v4)  */
    top_dev host;           /* then its pool, device CA_STATS_HOST_DEVICE               */
    int alive;              /* set by the scanner, not by the parser */
    int responding;         /* scanner: alive, and its heartbeat is recent */
    uint64_t heartbeat_age_ms; /* scanner: how old the heartbeat was when read */
    int removed;            /* the scanner removed the stale segment */
} top_proc;

/* Parse len bytes of a segment copy into out. When want_uid/want_pid are >= 0 the header must
 * name the same uid and pid. Returns 0, or -1 with a reason in why (always NUL-terminated). */
int top_seg_parse(const void *buf, size_t len, long want_uid, long want_pid, top_proc *out,
                  char *why, size_t whylen);

/* Offset and size of record i (device records, then host records) when the header in buf is
 * valid enough to locate it; 0 when the record lies outside buf. Used by the scanner to re-read
 * records under their seqlock. */
int top_seg_record_span(const void *buf, size_t len, unsigned i, size_t *off, size_t *size);

/* The indices of the records a reader parses in buf's segment: the device records published,
 * the first host record, the ident records of the published devices; the count, at most max,
 * into idx. */
unsigned top_seg_records_used(const void *buf, size_t len, unsigned *idx, unsigned max);

/* Free what a parsed top_proc owns. */
void top_proc_clear(top_proc *p);

#endif
