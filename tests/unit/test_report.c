/* The timeline (CACHEALLOC_TRACE) and the leak report (CACHEALLOC_LEAK_CHECK), in-process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "arena/arena.h"
#include "fake_backend.h"
#include "arena/leak.h"
#include "stats/trace.h"

static fake_device dev;
static ca_backend be;

static void test_trace_csv(void **state)
{
    (void)state;
    char path[] = "/tmp/cachealloc-trace-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    ca_trace *t = ca_trace_open(path, stderr);
    assert_non_null(t);
    fake_init(&dev, &be, 1ull << 30);
    ca_config cfg = {.release_threshold = UINT64_MAX, .max_split = UINT64_MAX, .quiet = 1,
                     .trace = ca_trace_event, .trace_ctx = t};
    ca_arena *a = ca_arena_create(&be, &cfg);
    void *p, *q;
    assert_int_equal(ca_malloc(a, 0, 1000, NULL, CA_API_PLAIN, &p), CA_OK);
    assert_int_equal(ca_malloc(a, 0, 3000, NULL, CA_API_PLAIN, &q), CA_OK);
    assert_int_equal(ca_free(a, p, NULL, CA_API_PLAIN, NULL), CA_OK);
    assert_int_equal(ca_free(a, q, NULL, CA_API_PLAIN, NULL), CA_OK);
    ca_reclaim(a, -1);
    ca_arena_destroy(a);
    ca_trace_close(t);

    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[256];
    char events[8][4] = {{0}};
    unsigned long sizes[8] = {0}, seqs[8] = {0}, handles[8] = {0};
    int n = 0;
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, "seq,time_us,event,handle,size,stream\n");
    while (n < 8 && fgets(line, sizeof line, f)) {
        unsigned long long us;
        assert_int_equal(sscanf(line, "%lu,%llu,%3[A-Z],%lx,%lu,", &seqs[n], &us, events[n],
                                &handles[n], &sizes[n]), 5);
        assert_true(us > 0);
        n++;
    }
    fclose(f);
    unlink(path);
    /* One segment in, two allocations and frees (requested sizes), the segment out. */
    assert_int_equal(n, 6);
    const char *want[] = {"SA", "A", "A", "F", "F", "SF"};
    for (int i = 0; i < 6; i++) {
        assert_string_equal(events[i], want[i]);
        assert_int_equal(seqs[i], (unsigned long)i);
    }
    assert_int_equal(sizes[0], 2u << 20);
    assert_int_equal(sizes[1], 1000);
    assert_int_equal(sizes[2], 3000);
    assert_int_equal(handles[1], handles[3]);
    assert_int_equal(handles[0], handles[5]);
}

static void test_trace_unwritable(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *err = open_memstream(&buf, &len);
    assert_null(ca_trace_open("/nonexistent-dir/x.csv", err));
    fclose(err);
    assert_non_null(strstr(buf, "CACHEALLOC_TRACE=/nonexistent-dir/x.csv"));
    assert_int_equal(strchr(buf, '\n') - buf + 1, (long)len); /* exactly one line */
    free(buf);
}

static void test_leak_report(void **state)
{
    (void)state;
    fake_init(&dev, &be, 1ull << 30);
    ca_config cfg = {.release_threshold = UINT64_MAX, .max_split = UINT64_MAX, .quiet = 1,
                     .record_alloc_times = 1, .record_stacks = 1};
    ca_arena *a = ca_arena_create(&be, &cfg);
    void *kept, *freed;
    assert_int_equal(ca_malloc(a, 0, 12345, NULL, CA_API_PLAIN, &kept), CA_OK);
    assert_int_equal(ca_malloc(a, 0, 777, NULL, CA_API_PLAIN, &freed), CA_OK);
    assert_int_equal(ca_free(a, freed, NULL, CA_API_PLAIN, NULL), CA_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    assert_int_equal(ca_leak_report(a, "cuda", out), 1);
    fclose(out);
    assert_non_null(strstr(buf, "1 cuda allocation never freed (12345 bytes)"));
    char want[64];
    snprintf(want, sizeof want, "device 0: %p, 12345 bytes, allocated ", kept);
    assert_non_null(strstr(buf, want));
    assert_null(strstr(buf, "777"));
    free(buf);
    /* Nothing left: nothing printed. */
    assert_int_equal(ca_free(a, kept, NULL, CA_API_PLAIN, NULL), CA_OK);
    out = open_memstream(&buf, &len);
    assert_int_equal(ca_leak_report(a, "cuda", out), 0);
    fclose(out);
    assert_int_equal(len, 0);
    free(buf);
    ca_arena_destroy(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_csv),
        cmocka_unit_test(test_trace_unwritable),
        cmocka_unit_test(test_leak_report),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
