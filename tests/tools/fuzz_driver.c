/* The segment parser over crafted cases (each must be accepted or rejected as stated) and
 * random mutations of a valid segment (none may crash; run under ASan to catch overreads).
 * Every case is copied into a buffer of exactly its length, so an overread is detectable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seg_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t g_len;
static unsigned char *g_valid;
static int g_failures;

static void make_valid(void)
{
    g_len = sizeof(ca_stats_header) + 4 * sizeof(ca_stats_record);
    g_valid = calloc(1, g_len);
    ca_stats_header *h = (ca_stats_header *)g_valid;
    h->magic = CA_STATS_MAGIC;
    h->abi_version = CA_STATS_ABI_VERSION;
    h->header_size = sizeof *h;
    h->record_size = sizeof(ca_stats_record);
    h->device_capacity = 4;
    h->device_used = 2;
    h->uid = 1000;
    h->pid = 4242;
    strcpy(h->api, "cuda");
    strcpy(h->cmdline, "python train.py \"x\"\n\x1b[31m");
    ca_stats_record *r = (ca_stats_record *)(g_valid + sizeof *h);
    for (unsigned i = 0; i < 2; i++) {
        r[i].seq = 2;
        r[i].device = i;
        r[i].in_use = 1;
        r[i].v.reserved_bytes = 1u << 20;
    }
}

/* Run the parser on a private copy of exactly len bytes; expect acceptance or not. */
static void run_case(const char *name, const unsigned char *buf, size_t len, int expect_ok)
{
    unsigned char *copy = malloc(len ? len : 1);
    memcpy(copy, buf, len);
    LLVMFuzzerTestOneInput(copy, len);
    top_proc p;
    char why[128];
    int ok = top_seg_parse(copy, len, -1, -1, &p, why, sizeof why) == 0;
    if (ok)
        top_proc_clear(&p);
    if (expect_ok >= 0 && ok != expect_ok) {
        fprintf(stderr, "FAIL %s: %s\n", name, ok ? "accepted" : why);
        g_failures++;
    }
    free(copy);
}

static void with_u32(const char *name, size_t off, uint32_t v, int expect_ok)
{
    unsigned char *b = malloc(g_len);
    memcpy(b, g_valid, g_len);
    memcpy(b + off, &v, sizeof v);
    run_case(name, b, g_len, expect_ok);
    free(b);
}

/* A copy of the valid segment b (g_len bytes) as a writer of `version` < 5 lays it out: the
 * same header, records of CA_STATS_RECORD_SIZE_V4 bytes (the words version 5 appended cut
 * off); its length into *len. */
static unsigned char *as_older(const unsigned char *b, uint32_t version, size_t *len)
{
    const ca_stats_header *h = (const ca_stats_header *)b;
    size_t n = (g_len - sizeof *h) / sizeof(ca_stats_record);
    *len = sizeof *h + n * CA_STATS_RECORD_SIZE_V4;
    unsigned char *o = calloc(1, *len);
    memcpy(o, b, sizeof *h);
    for (size_t i = 0; i < n; i++)
        memcpy(o + sizeof *h + i * CA_STATS_RECORD_SIZE_V4,
               b + sizeof *h + i * sizeof(ca_stats_record), CA_STATS_RECORD_SIZE_V4);
    ((ca_stats_header *)o)->abi_version = version;
    ((ca_stats_header *)o)->record_size = CA_STATS_RECORD_SIZE_V4;
    return o;
}

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAIL %s\n", what);
        g_failures++;
    }
}

/* The time the cache's waits cost (version 5): read from a version 5 record, absent from a
 * version 4 segment of the older record size, and each version only at its own size. */
static void waits_cases(void)
{
    unsigned char *b = malloc(g_len);
    memcpy(b, g_valid, g_len);
    ca_stats_record *r = (ca_stats_record *)(b + sizeof(ca_stats_header));
    r[1].w.sync_wait_ns = 1500000000u;
    r[1].w.fence_wait_ns = 250;
    r[1].w.fence_waits = 5;
    r[1].w.grow_ns = 2000000;
    r[1].w.growths = 10;
    top_proc p;
    char why[128];
    int ok = top_seg_parse(b, g_len, -1, -1, &p, why, sizeof why) == 0;
    expect(ok && p.ndev == 2 && p.dev[1].has_waits && p.dev[1].w.sync_wait_ns == 1500000000u &&
               p.dev[1].w.fence_wait_ns == 250 && p.dev[1].w.fence_waits == 5 &&
               p.dev[1].w.grow_ns == 2000000 && p.dev[1].w.growths == 10 &&
               p.dev[0].w.growths == 0,
           "the waits of a version 5 record read wrongly");
    if (ok)
        top_proc_clear(&p);
    size_t len;
    unsigned char *old = as_older(b, 4, &len);
    run_case("version 4 at its record size", old, len, 1);
    ok = top_seg_parse(old, len, -1, -1, &p, why, sizeof why) == 0;
    expect(ok && p.ndev == 2 && p.abi_version == 4 && !p.dev[1].has_waits &&
               p.dev[1].w.sync_wait_ns == 0 && p.dev[1].w.growths == 0 &&
               p.dev[1].v.reserved_bytes == 1u << 20,
           "a version 4 segment is not read without the waits");
    if (ok)
        top_proc_clear(&p);
    /* each version at the other's record size */
    ((ca_stats_header *)old)->record_size = sizeof(ca_stats_record);
    run_case("version 4 at version 5's record size", old, len, 0);
    free(old);
    with_u32("version 5 at version 4's record size", offsetof(ca_stats_header, record_size),
             CA_STATS_RECORD_SIZE_V4, 0);
    free(b);
}

static uint64_t g_rng = 0x9e3779b97f4a7c15u;
static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

int main(int argc, char **argv)
{
    long iterations = argc > 1 ? atol(argv[1]) : 20000;
    make_valid();
    run_case("valid", g_valid, g_len, 1);
    {
        top_proc p;
        char why[128];
        if (top_seg_parse(g_valid, g_len, 1000, 4242, &p, why, sizeof why) != 0 ||
            p.ndev != 2 || strchr(p.cmdline, '\n') || strchr(p.cmdline, '\x1b')) {
            fprintf(stderr, "FAIL valid segment parsed wrongly or control bytes kept\n");
            g_failures++;
        }
        top_proc_clear(&p);
        if (top_seg_parse(g_valid, g_len, 1001, 4242, &p, why, sizeof why) == 0) {
            fprintf(stderr, "FAIL uid mismatch accepted\n");
            g_failures++;
            top_proc_clear(&p);
        }
    }
    run_case("empty", g_valid, 0, 0);
    for (size_t cut = 1; cut < g_len; cut += 61)
        run_case("truncated", g_valid, cut, 0);
    with_u32("wrong magic", 0, 0x12345678u, 0);
    with_u32("wrong version", offsetof(ca_stats_header, abi_version), 99, 0);
    with_u32("wrong header size", offsetof(ca_stats_header, header_size), 4096, 0);
    with_u32("wrong record size", offsetof(ca_stats_header, record_size), 8, 0);
    with_u32("huge capacity", offsetof(ca_stats_header, device_capacity), 0xffffffffu, 0);
    with_u32("capacity beyond file", offsetof(ca_stats_header, device_capacity), 5, 0);
    with_u32("used beyond capacity", offsetof(ca_stats_header, device_used), 5, 0);
    with_u32("zero pid", offsetof(ca_stats_header, pid), 0, 0);
    {
        /* unterminated strings: accepted, truncated */
        unsigned char *b = malloc(g_len);
        memcpy(b, g_valid, g_len);
        memset(b + offsetof(ca_stats_header, api), 'A', sizeof(ca_stats_header) - offsetof(ca_stats_header, api));
        run_case("unterminated strings", b, g_len, 1);
        free(b);
    }
    {
        /* the device's memory: read from version 2, ignored in a version 1 segment (its spare
         * words), and never trusted when free exceeds total; what was given to neighbours:
         * read from version 3, a spare word before */
        unsigned char *b = malloc(g_len);
        memcpy(b, g_valid, g_len);
        ca_stats_record *r = (ca_stats_record *)(b + sizeof(ca_stats_header));
        r[0].mem_total_bytes = 8000;
        r[0].mem_free_bytes = 3000;
        r[1].mem_total_bytes = 8000;
        r[1].mem_free_bytes = 9000;
        r[0].given_bytes = 4096;
        top_proc p;
        char why[128];
        if (top_seg_parse(b, g_len, -1, -1, &p, why, sizeof why) != 0 || p.ndev != 2 ||
            p.abi_version != CA_STATS_ABI_VERSION || !p.dev[0].has_mem ||
            p.dev[0].mem_total != 8000 || p.dev[0].mem_free != 3000 || p.dev[1].has_mem ||
            p.dev[0].given != 4096) {
            fprintf(stderr, "FAIL device memory or gift of a version 3 record read wrongly\n");
            g_failures++;
        }
        top_proc_clear(&p);
        size_t len;
        unsigned char *v2 = as_older(b, 2, &len);
        if (top_seg_parse(v2, len, -1, -1, &p, why, sizeof why) != 0 || p.ndev != 2 ||
            !p.dev[0].has_mem || p.dev[0].given != 0) {
            fprintf(stderr, "FAIL a version 2 segment's spare word is read as a gift\n");
            g_failures++;
        }
        top_proc_clear(&p);
        ((ca_stats_header *)v2)->abi_version = 1;
        if (top_seg_parse(v2, len, -1, -1, &p, why, sizeof why) != 0 || p.ndev != 2 ||
            p.abi_version != 1 || p.dev[0].has_mem || p.dev[0].mem_total != 0 ||
            p.dev[0].v.reserved_bytes != 1u << 20) {
            fprintf(stderr, "FAIL a version 1 segment is not read without device memory\n");
            g_failures++;
        }
        top_proc_clear(&p);
        free(v2);
        free(b);
    }
    waits_cases();
    with_u32("version 0", offsetof(ca_stats_header, abi_version), 0, 0);
    with_u32("next version", offsetof(ca_stats_header, abi_version), CA_STATS_ABI_VERSION + 1, 0);
    {
        /* a torn record (odd seq) is skipped, not trusted */
        unsigned char *b = malloc(g_len);
        memcpy(b, g_valid, g_len);
        ((ca_stats_record *)(b + sizeof(ca_stats_header)))[0].seq = 3;
        top_proc p;
        char why[128];
        if (top_seg_parse(b, g_len, -1, -1, &p, why, sizeof why) != 0 || p.ndev != 1 || p.nbusy != 1) {
            fprintf(stderr, "FAIL torn record not skipped\n");
            g_failures++;
        }
        top_proc_clear(&p);
        free(b);
    }
    unsigned char *b = malloc(g_len);
    for (long it = 0; it < iterations; it++) {
        memcpy(b, g_valid, g_len);
        int flips = 1 + (int)(rnd() % 8);
        for (int f = 0; f < flips; f++) {
            size_t at = (size_t)(rnd() % g_len);
            switch (rnd() % 3) {
            case 0: b[at] ^= (unsigned char)(1u << (rnd() % 8)); break;
            case 1: b[at] = (unsigned char)rnd(); break;
            default: if (at + 4 <= g_len) { uint32_t v = (uint32_t)rnd(); memcpy(b + at, &v, 4); } break;
            }
        }
        run_case("mutation", b, (size_t)(rnd() % 4 == 0 ? rnd() % (g_len + 1) : g_len), -1);
    }
    free(b);
    free(g_valid);
    if (g_failures)
        return 1;
    printf("segment parser: crafted cases and %ld mutations passed\n", iterations);
    return 0;
}
