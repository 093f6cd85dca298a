/* Validation order: sizes of the buffer, magic, version, header and record sizes, counts, the
 * file size they imply; only then the strings (NUL-terminated and sanitized here) and the
 * records (a record whose seqlock word is odd is skipped: it was torn). */
#include "seg_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(char *why, size_t whylen, const char *msg)
{
    if (why && whylen)
        snprintf(why, whylen, "%s", msg);
    return -1;
}

/* Copy a fixed-size field, stopping at NUL, keeping printable ASCII only: what reaches a
 * terminal or a JSON document cannot carry escapes or broken UTF-8. */
static void copy_field(char *dst, const char *src, size_t len)
{
    size_t i = 0;
    for (; i + 1 < len && src[i]; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    dst[i] = '\0';
}

/* The header fields that locate records, checked for sanity. */
static int header_geometry(const void *buf, size_t len, ca_stats_header *h, char *why,
                           size_t whylen)
{
    if (!buf || len < sizeof *h)
        return fail(why, whylen, "shorter than a header");
    memcpy(h, buf, sizeof *h);
    if (h->magic != CA_STATS_MAGIC)
        return fail(why, whylen, "bad magic (not a cachealloc segment, or still starting)");
    /* Version 1's layout is version 2's: it only lacks the device memory (seg_parse). */
    if (h->abi_version < CA_STATS_ABI_VERSION_MIN || h->abi_version > CA_STATS_ABI_VERSION)
        return fail(why, whylen, "unsupported ABI version");
    if (h->header_size != sizeof *h)
        return fail(why, whylen, "unexpected header size");
    /* Each version's own size: a version 4 segment has the shorter records (abi.h). */
    if (h->record_size != ca_stats_record_size(h->abi_version))
        return fail(why, whylen, "unexpected record size");
    if (h->device_capacity > CA_STATS_MAX_RECORDS)
        return fail(why, whylen, "device capacity too large");
    if (h->device_used > h->device_capacity)
        return fail(why, whylen, "more devices used than capacity");
    /* Before version 4 the words were spare: no host or ident records. */
    if (h->abi_version < 4)
        h->host_records = h->ident_records = 0;
    if (h->host_records > CA_STATS_MAX_RECORDS - h->device_capacity)
        return fail(why, whylen, "too many host records");
    if (h->ident_records > CA_STATS_MAX_RECORDS - h->device_capacity - h->host_records)
        return fail(why, whylen, "too many ident records");
    uint64_t need = (uint64_t)h->header_size +
                    (uint64_t)(h->device_capacity + h->host_records + h->ident_records) *
                        h->record_size;
    if (need > CA_STATS_MAX_SEGMENT)
        return fail(why, whylen, "segment too large");
    if (need > len)
        return fail(why, whylen, "truncated: shorter than its record count implies");
    return 0;
}

int top_seg_record_span(const void *buf, size_t len, unsigned i, size_t *off, size_t *size)
{
    ca_stats_header h;
    if (header_geometry(buf, len, &h, NULL, 0) != 0 ||
        i >= h.device_capacity + h.host_records + h.ident_records)
        return 0;
    *off = (size_t)h.header_size + (size_t)i * h.record_size;
    *size = h.record_size;
    return 1;
}

unsigned top_seg_records_used(const void *buf, size_t len, unsigned *idx, unsigned max)
{
    ca_stats_header h;
    unsigned n = 0;
    if (header_geometry(buf, len, &h, NULL, 0) != 0)
        return 0;
    for (unsigned i = 0; i < h.device_used && n < max; i++)
        idx[n++] = i;
    if (h.host_records && n < max) /* the first: the only one parsed */
        idx[n++] = h.device_capacity;
    for (unsigned i = 0; i < h.device_used && i < h.ident_records && n < max; i++)
        idx[n++] = h.device_capacity + h.host_records + i;
    return n;
}

/* Record i of a valid segment, at its version's size, the words it lacks 0. */
static void read_record(const unsigned char *base, const ca_stats_header *h, size_t i, void *rec)
{
    const unsigned char *r = base + h->header_size + i * h->record_size;
    memset(rec, 0, sizeof(ca_stats_record));
    memcpy(rec, r, h->record_size < sizeof(ca_stats_record) ? h->record_size
                                                            : sizeof(ca_stats_record));
}

int top_seg_parse(const void *buf, size_t len, long want_uid, long want_pid, top_proc *out,
                  char *why, size_t whylen)
{
    ca_stats_header h;
    memset(out, 0, sizeof *out);
    if (header_geometry(buf, len, &h, why, whylen) != 0)
        return -1;
    if (h.pid == 0 || h.pid > INT32_MAX)
        return fail(why, whylen, "bad pid");
    if (want_uid >= 0 && h.uid != (uint64_t)want_uid)
        return fail(why, whylen, "uid in header differs from its name");
    if (want_pid >= 0 && h.pid != (uint64_t)want_pid)
        return fail(why, whylen, "pid in header differs from its name");

    out->pid = (int)h.pid;
    out->uid = h.uid;
    out->start_time = h.start_time;
    out->heartbeat_ns = h.heartbeat_ns;
    out->publish_count = h.publish_count;
    out->abi_version = h.abi_version;
    copy_field(out->api, h.api, sizeof out->api);
    copy_field(out->config, h.config, sizeof out->config);
    copy_field(out->cmdline, h.cmdline, sizeof out->cmdline);

    if (h.device_used) {
        out->dev = calloc(h.device_used, sizeof *out->dev);
        if (!out->dev)
            return fail(why, whylen, "out of memory");
    }
    const unsigned char *base = buf;
    for (unsigned i = 0; i < h.device_used; i++) {
        ca_stats_record rec;
        read_record(base, &h, i, &rec);
        if (rec.seq & 1u) {
            out->nbusy++;
            continue;
        }
        if (!rec.in_use || rec.device != i)
            continue;
        top_dev *d = &out->dev[out->ndev++];
        d->device = rec.device;
        d->v = rec.v;
        /* Version 1 kept these words spare; a free above the total is no answer either. */
        if (h.abi_version >= 2 && rec.mem_total_bytes != 0 &&
            rec.mem_free_bytes <= rec.mem_total_bytes) {
            d->has_mem = 1;
            d->mem_total = rec.mem_total_bytes;
            d->mem_free = rec.mem_free_bytes;
        }
        d->given = h.abi_version >= 3 ? rec.given_bytes : 0; /* a spare word before */
        d->has_waits = h.abi_version >= 5;
        d->w = rec.w;
        d->named = i >= h.ident_records; /* no ident record: no names to wait for */
        if (i < h.ident_records) {
            ca_stats_ident id;
            read_record(base, &h, (size_t)h.device_capacity + h.host_records + i, &id);
            if (!(id.seq & 1u) && id.known && id.device == i) {
                d->named = 1;
                copy_field(d->uuid, id.uuid, sizeof d->uuid);
                copy_field(d->pci_bus_id, id.pci_bus_id, sizeof d->pci_bus_id);
            }
        }
    }
    /* The first host record is the pool of pinned memory; later ones are for later writers. */
    if (h.host_records) {
        ca_stats_record rec;
        read_record(base, &h, h.device_capacity, &rec);
        if (rec.seq & 1u)
            out->nbusy++;
        else if (rec.in_use && rec.device == CA_STATS_HOST_DEVICE) {
            out->has_host = 1;
            out->host.device = CA_STATS_HOST_DEVICE;
            out->host.v = rec.v;
            out->host.has_waits = h.abi_version >= 5;
            out->host.w = rec.w;
        }
    }
    return 0;
}

void top_proc_clear(top_proc *p)
{
    free(p->dev);
    p->dev = NULL;
    p->ndev = 0;
}
