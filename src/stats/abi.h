/* The statistics segment: the one interface src/ (the writer) shares with tools/ (the reader).
 *
 * One segment per process, named /cachealloc.<uid>.<pid> (a file in /dev/shm, or in
 * $CACHEALLOC_SHM_DIR), mode 0600. A header, then device_capacity records of record_size bytes,
 * host_records more (pinned host memory) and ident_records more (the devices' names).
 * Plain C, fixed layout: every offset below is static-asserted, so a change of layout cannot
 * go unnoticed. Any change of meaning bumps CA_STATS_ABI_VERSION; readers reject versions
 * outside CA_STATS_ABI_VERSION_MIN..CA_STATS_ABI_VERSION. docs/stats.md describes the protocol.
 *
 * The rule of growth: no offset ever moves. A version may give meaning to spare words, or
 * append words to the record (and to the ident record, which has the record's size); the
 * header's record_size is then the size of the version it names (ca_stats_record_size), and a
 * reader accepts a segment only with exactly that size, reading the words its version lacks
 * as absent.
 *
 * Concurrency: the writer updates 64-bit fields with atomic stores. Each record is guarded by a
 * seqlock (seq odd while the writer is inside; readers retry on an odd or changed value). The
 * control words are written with atomic read-modify-write by readers and stores by the writer.
 */
#ifndef CACHEALLOC_STATS_ABI_H
#define CACHEALLOC_STATS_ABI_H

#include <fcntl.h>
#include <linux/futex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CA_STATS_MAGIC UINT64_C(0x31534154534143ca) /* bytes ca 'C' 'A' 'S' 'T' 'A' 'S' '1' */
/* Version 2 gave meaning to two of version 1's spare record words (the device's memory as the
 * driver reports it); version 3 to the last one (bytes given to neighbours) and to a flag of
 * the reclaim request; version 4 to two spare header words: host_records, records that follow
 * the device records and hold pinned host memory's pool, and ident_records, records after those
 * that name each device as its driver does (UUID, PCI bus id). The layout is the same, so older
 * segments still read, without them. Version 5 appends eight words to the record (a record of
 * 256 bytes, 192 before): the time the cache's own waits cost (ca_stats_waits), and three
 * spare words; older segments still read, their records at the older size, without them. */
#define CA_STATS_ABI_VERSION 5u
#define CA_STATS_ABI_VERSION_MIN 1u
#define CA_STATS_NAME_PREFIX "cachealloc."          /* then <uid>.<pid>                     */
#define CA_STATS_DEFAULT_DIR "/dev/shm"
#define CA_STATS_DIR_ENV "CACHEALLOC_SHM_DIR"

#define CA_STATS_API_LEN 16
#define CA_STATS_CONFIG_LEN 240
#define CA_STATS_CMDLINE_LEN 640
#define CA_STATS_DEVICE_CAPACITY 64u   /* records the writer creates (CA_MAX_DEVICES)   */
#define CA_STATS_MAX_RECORDS 1024u     /* readers reject larger counts                  */
#define CA_STATS_MAX_SEGMENT (1u << 20)/* readers reject larger files                   */
#define CA_STATS_HOST_RECORDS 1u       /* host records the writer creates (version 4)   */
#define CA_STATS_HOST_DEVICE UINT32_MAX /* the device word of a host record             */
#define CA_STATS_UUID_LEN 48           /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"     */
#define CA_STATS_PCI_LEN 32            /* "00000000:3B:00.0"                              */

/* Reclaim requests: the reader sets reclaim_request to (seq << 16) | device code, seq one more
 * than the previous request's, device code 0 for every device or device + 1, plus
 * CA_STATS_RECLAIM_NEIGHBOUR when another process under the cache asks (version 3 writers
 * count what they give it). The writer answers by storing reclaim_bytes, then reclaim_done =
 * seq (release order). A reader may wake the writer with a futex wake on the request word's
 * low 32 bits (a shared futex; the writer waits on it between its rounds). */
#define CA_STATS_RECLAIM_NEIGHBOUR 0x8000u
#define CA_STATS_RECLAIM_SEQ(word) ((word) >> 16)
#define CA_STATS_RECLAIM_DEV(word) ((int)((word) & 0x7fffu) - 1)   /* -1: all devices */
#define CA_STATS_RECLAIM_FROM_NEIGHBOUR(word) (((word) & CA_STATS_RECLAIM_NEIGHBOUR) != 0)
#define CA_STATS_RECLAIM_WORD(seq, dev) \
    (((uint64_t)(seq) << 16) | (uint64_t)((dev) < 0 ? 0u : ((unsigned)(dev) + 1u) & 0x7fffu))

/* Per-device statistics, in record order: X(name, kind, help), kind G (gauge) or C (counter).
 * Names equal the fields of ca_dev_stats (src/arena.h); the writer static-asserts the match. */
#define CA_STATS_FIELDS(X)                                                                    \
    X(reserved_bytes, G, "Bytes in segments taken from the driver")                           \
    X(allocated_bytes, G, "Bytes in blocks the program holds")                                \
    X(cached_bytes, G, "Bytes in free blocks reusable by some stream")                        \
    X(pending_bytes, G, "Bytes freed and waiting for a fence or an event")                    \
    X(requested_bytes, G, "Bytes the program asked for, before rounding")                     \
    X(peak_reserved_bytes, G, "Highest reserved_bytes seen")                                  \
    X(peak_allocated_bytes, G, "Highest allocated_bytes seen")                                \
    X(alloc_calls, C, "Allocation calls of the program")                                      \
    X(free_calls, C, "Free calls of the program")                                             \
    X(cache_hits, C, "Allocations served without the driver")                                 \
    X(driver_alloc_calls, C, "Allocations asked of the driver")                               \
    X(driver_free_calls, C, "Frees passed to the driver")                                     \
    X(fences, C, "Fences recorded for the plain API")                                         \
    X(device_syncs, C, "Device synchronizations done by the cache")                           \
    X(oom_recoveries, C, "Out-of-memory conditions recovered by flushing the cache")          \
    X(oom_failures, C, "Allocations that failed with out-of-memory")                          \
    X(invalid_frees, C, "Frees of interior or already freed pointers")                        \
    X(segments, G, "Segments taken from the driver")                                          \
    X(largest_free_block, G, "Largest free block in bytes")

#define CA_STATS_DECLARE_FIELD_(name, kind, help) uint64_t name;
typedef struct ca_stats_values {
    CA_STATS_FIELDS(CA_STATS_DECLARE_FIELD_)
} ca_stats_values;
#undef CA_STATS_DECLARE_FIELD_

#define CA_STATS_COUNT_FIELD_(name, kind, help) +1
enum { CA_STATS_NFIELDS = 0 CA_STATS_FIELDS(CA_STATS_COUNT_FIELD_) };

/* The time the cache's own waits cost a device's program (version 5), in record order after
 * given_bytes: X(name, kind, help), kind T a counter of nanoseconds, C a counter. Names equal
 * the last fields of ca_dev_stats. */
#define CA_STATS_WAIT_FIELDS(X)                                                               \
    X(sync_wait_ns, T, "Time the program's threads spent in device synchronizations the "   \
                       "cache made")                                                         \
    X(fence_wait_ns, T, "Time the program's threads spent waiting for fences and stream "   \
                        "events")                                                            \
    X(fence_waits, C, "Waits for fences and stream events")                                  \
    X(grow_ns, T, "Time in driver calls that grew the cache (allocations, creations and "   \
                  "mappings of segments and pages)")                                         \
    X(growths, C, "Driver calls that grew the cache")

#define CA_STATS_DECLARE_FIELD_(name, kind, help) uint64_t name;
typedef struct ca_stats_waits {
    CA_STATS_WAIT_FIELDS(CA_STATS_DECLARE_FIELD_)
} ca_stats_waits;
#undef CA_STATS_DECLARE_FIELD_
enum { CA_STATS_NWAITS = 0 CA_STATS_WAIT_FIELDS(CA_STATS_COUNT_FIELD_) };
#undef CA_STATS_COUNT_FIELD_

/* One device, or the pinned host memory pool (device CA_STATS_HOST_DEVICE, after the device
 * records; its numbers mean for host memory what they mean for a device's, its mem_* and
 * given_bytes are 0). seq is the seqlock word; in_use is 0 for a slot the process never used.
 * mem_*: the device's total and free memory as the driver (runtime) answered the monitor
 * thread at its last period; 0 total: not known yet, or the question failed (version 2).
 * given_bytes: released at other processes' requests, a counter (version 3).
 * w: the time the cache's waits cost (version 5; a version 4 record ends before it).
 * spare: 0, for later versions. */
typedef struct ca_stats_record {
    uint64_t seq;
    uint32_t device;
    uint32_t in_use;
    ca_stats_values v;
    uint64_t mem_total_bytes;
    uint64_t mem_free_bytes;
    uint64_t given_bytes;
    ca_stats_waits w;
    uint64_t spare[3];
} ca_stats_record;

#define CA_STATS_RECORD_SIZE_V4 192u /* the record of versions 1 to 4 */

/* The record_size a segment of ABI version `version` must have; 0 for an unknown version. */
static inline size_t ca_stats_record_size(uint32_t version)
{
    if (version < CA_STATS_ABI_VERSION_MIN || version > CA_STATS_ABI_VERSION)
        return 0;
    return version < 5 ? CA_STATS_RECORD_SIZE_V4 : sizeof(ca_stats_record);
}

/* A device's names, as the driver gives them (version 4): record device_capacity +
 * host_records + d names device d, under its own seqlock; known is 0 until the driver
 * answered. Strings are NUL-terminated, "" when the driver has no such name: uuid as NVIDIA
 * writes it (nvidia-smi, dcgm-exporter; under MIG the GPU's), pci_bus_id as dcgm-exporter
 * writes it. */
typedef struct ca_stats_ident {
    uint64_t seq;
    uint32_t device;
    uint32_t known;
    char uuid[CA_STATS_UUID_LEN];
    char pci_bus_id[CA_STATS_PCI_LEN];
    char spare[160];  /* 96 bytes before version 5: the record's size less the names */
} ca_stats_ident;

typedef struct ca_stats_header {
    uint64_t magic;            /* CA_STATS_MAGIC, stored last by the writer (release)      */
    uint32_t abi_version;
    uint32_t header_size;      /* sizeof(ca_stats_header)                                  */
    uint32_t record_size;      /* ca_stats_record_size(abi_version)                        */
    uint32_t device_capacity;  /* records that follow the header                           */
    uint32_t device_used;      /* records published so far (atomic)                        */
    uint32_t uid;
    uint64_t pid;
    uint64_t start_time;       /* field 22 of /proc/<pid>/stat: clock ticks since boot      */
    uint64_t heartbeat_ns;     /* CLOCK_MONOTONIC, beaten by the monitor thread (atomic);
                                * 0 once the writer stopped                                 */
    uint64_t publish_count;    /* snapshots published (atomic)                             */
    uint64_t reclaim_request;  /* written by readers: CA_STATS_RECLAIM_WORD                */
    uint64_t reclaim_done;     /* written by the writer: seq of the last request served    */
    uint64_t reclaim_bytes;    /* written by the writer: bytes released by that request    */
    uint64_t flags;            /* none defined yet: 0                                      */
    uint32_t host_records;     /* records after the device_capacity ones: host pools (v4)  */
    uint32_t ident_records;    /* records after those: ca_stats_ident, one a device (v4)   */
    uint64_t spare[3];
    char api[CA_STATS_API_LEN];          /* "cuda" or "hip", NUL-terminated                 */
    char config[CA_STATS_CONFIG_LEN];    /* configuration summary, NUL-terminated           */
    char cmdline[CA_STATS_CMDLINE_LEN];  /* arguments joined by spaces, truncated, NUL-term. */
} ca_stats_header;

_Static_assert(sizeof(ca_stats_values) == CA_STATS_NFIELDS * 8, "values are packed u64");
_Static_assert(offsetof(ca_stats_record, v) == 16, "record layout");
_Static_assert(offsetof(ca_stats_record, mem_total_bytes) == 168, "record layout");
_Static_assert(offsetof(ca_stats_record, mem_free_bytes) == 176, "record layout");
_Static_assert(offsetof(ca_stats_record, given_bytes) == 184, "record layout");
_Static_assert(offsetof(ca_stats_record, w) == CA_STATS_RECORD_SIZE_V4, "version 5 appends");
_Static_assert(sizeof(ca_stats_waits) == CA_STATS_NWAITS * 8, "waits are packed u64");
_Static_assert(offsetof(ca_stats_record, w.sync_wait_ns) == 192, "record layout");
_Static_assert(offsetof(ca_stats_record, w.growths) == 224, "record layout");
_Static_assert(sizeof(ca_stats_record) == 256, "record size");
_Static_assert(sizeof(ca_stats_ident) == sizeof(ca_stats_record), "an ident is a record");
_Static_assert(offsetof(ca_stats_ident, uuid) == 16, "ident layout");
_Static_assert(offsetof(ca_stats_ident, pci_bus_id) == 64, "ident layout");
_Static_assert(offsetof(ca_stats_header, abi_version) == 8, "header layout");
_Static_assert(offsetof(ca_stats_header, device_capacity) == 20, "header layout");
_Static_assert(offsetof(ca_stats_header, device_used) == 24, "header layout");
_Static_assert(offsetof(ca_stats_header, pid) == 32, "header layout");
_Static_assert(offsetof(ca_stats_header, heartbeat_ns) == 48, "header layout");
_Static_assert(offsetof(ca_stats_header, reclaim_request) == 64, "header layout");
_Static_assert(offsetof(ca_stats_header, reclaim_done) == 72, "header layout");
_Static_assert(offsetof(ca_stats_header, reclaim_bytes) == 80, "header layout");
_Static_assert(offsetof(ca_stats_header, host_records) == 96, "header layout");
_Static_assert(offsetof(ca_stats_header, ident_records) == 100, "header layout");
_Static_assert(offsetof(ca_stats_header, api) == 128, "header layout");
_Static_assert(offsetof(ca_stats_header, config) == 144, "header layout");
_Static_assert(offsetof(ca_stats_header, cmdline) == 384, "header layout");
_Static_assert(sizeof(ca_stats_header) == 1024, "header size");

/* Post a reclaim request of device code dev (-1: all) to a mapped header, flags or'ed into
 * the device code (CA_STATS_RECLAIM_NEIGHBOUR or 0): the request's seq, for polling
 * reclaim_done. Shared by every reader that asks, so that all number requests alike. */
static inline uint64_t ca_stats_reclaim_post(ca_stats_header *h, int dev, unsigned flags)
{
    uint64_t cur = __atomic_load_n(&h->reclaim_request, __ATOMIC_RELAXED);
    for (;;) {
        uint64_t done = __atomic_load_n(&h->reclaim_done, __ATOMIC_ACQUIRE);
        uint64_t last = CA_STATS_RECLAIM_SEQ(cur);
        uint64_t seq = (last > done ? last : done) + 1;
        if (seq > (UINT64_MAX >> 16))
            seq = 1;
        uint64_t want = CA_STATS_RECLAIM_WORD(seq, dev) | flags;
        if (__atomic_compare_exchange_n(&h->reclaim_request, &cur, want, 0, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED)) {
            syscall(SYS_futex, (uint32_t *)&h->reclaim_request, FUTEX_WAKE, 1, NULL, NULL, 0);
            return seq;
        }
    }
}

/* The start_time of process pid (0: this process) as the header records it: field 22 of
 * /proc/<pid>/stat, counted from the last ')' since the command name may hold spaces and
 * parentheses. 0 when it cannot be read. Writer and reader share it so they always agree. */
static inline uint64_t ca_stats_proc_start_time(int pid)
{
    char path[64], buf[1024];
    if (pid > 0)
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
    else
        snprintf(path, sizeof path, "/proc/self/stat");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    char *p = strrchr(buf, ')');
    if (p)
        p++; /* the space before field 3 */
    for (int field = 3; field < 22 && p; field++) /* p sits before field `field` */
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

#endif
