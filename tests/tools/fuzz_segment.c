/* libFuzzer entry for the segment parser (tools/top/seg_parse.c is linked in directly). The plain
 * driver (fuzz_driver.c) calls the same entry when libFuzzer is not available.
 *
 * The first input byte picks the form: odd, the rest is a segment as is; even, the rest
 * patches a valid segment (2-byte offset, 2-byte length to keep, then bytes to overwrite),
 * so the fuzzer gets past the magic and version checks and into the records at once. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "seg_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TEMPLATE_RECORDS 4u

static void check_one(const uint8_t *buf, size_t size)
{
    top_proc p;
    char why[128];
    size_t off, len;
    for (unsigned i = 0; i < 8 && top_seg_record_span(buf, size, i, &off, &len); i++)
        if (off + len > size)
            __builtin_trap(); /* a span must lie inside the buffer */
    if (top_seg_parse(buf, size, -1, -1, &p, why, sizeof why) == 0) {
        /* Whatever was accepted is NUL-terminated printable text. */
        if (strlen(p.cmdline) >= sizeof p.cmdline || strlen(p.api) >= sizeof p.api ||
            strlen(p.config) >= sizeof p.config)
            __builtin_trap();
        for (const char *c = p.cmdline; *c; c++)
            if (*c < 0x20 || *c == 0x7f)
                __builtin_trap();
        for (unsigned i = 0; i < p.ndev; i++)
            if (p.dev[i].device >= TEMPLATE_RECORDS * 256u ||
                (p.dev[i].has_mem && (p.dev[i].mem_total == 0 ||
                                      p.dev[i].mem_free > p.dev[i].mem_total)) ||
                (!p.dev[i].has_waits && (p.dev[i].w.sync_wait_ns || p.dev[i].w.growths)))
                __builtin_trap();
        top_proc_clear(&p);
    } else if (why[0] == '\0') {
        __builtin_trap(); /* every rejection says why */
    }
}

static void fill_template(uint8_t *b)
{
    ca_stats_header *h = (ca_stats_header *)b;
    h->magic = CA_STATS_MAGIC;
    h->abi_version = CA_STATS_ABI_VERSION;
    h->header_size = sizeof *h;
    h->record_size = sizeof(ca_stats_record);
    h->device_capacity = TEMPLATE_RECORDS;
    h->device_used = 2;
    h->uid = 1000;
    h->pid = 4242;
    memcpy(h->api, "cuda", 5);
    memcpy(h->cmdline, "python train.py", 16);
    ca_stats_record *r = (ca_stats_record *)(b + sizeof *h);
    for (unsigned i = 0; i < 2; i++) {
        r[i].seq = 2;
        r[i].device = i;
        r[i].in_use = 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1u) {
        /* exactly size - 1 bytes in their own allocation: an overread is caught */
        uint8_t *copy = malloc(size - 1 ? size - 1 : 1);
        memcpy(copy, data + 1, size - 1);
        check_one(copy, size - 1);
        free(copy);
        return 0;
    }
    const size_t full = sizeof(ca_stats_header) + TEMPLATE_RECORDS * sizeof(ca_stats_record);
    uint8_t *b = calloc(1, full);
    fill_template(b);
    size_t at = 0, keep = full;
    if (size >= 5) {
        at = ((size_t)data[1] | (size_t)data[2] << 8) % full;
        keep = ((size_t)data[3] | (size_t)data[4] << 8);
        keep = keep % (full + 1);
        size_t n = size - 5;
        if (n > full - at)
            n = full - at;
        memcpy(b + at, data + 5, n);
    }
    uint8_t *copy = malloc(keep ? keep : 1);
    memcpy(copy, b, keep);
    check_one(copy, keep);
    free(copy);
    free(b);
    return 0;
}
