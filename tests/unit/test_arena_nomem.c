/* The arena when host memory runs out (realloc wrapped at link time, -Wl,--wrap=realloc): a
 * non-blocking stream the arena could not add to its list of streams is not forgotten by the
 * fences. A fence without that stream's event would complete while work on it still reads a
 * freed block; the arena takes no fence at all then, and frees wait for a device
 * synchronization, which covers every stream. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "arena_fixture.h"

static int fail_realloc;

void *__real_realloc(void *p, size_t n);

/* realloc, or a failure while fail_realloc is set. */
void *__wrap_realloc(void *p, size_t n)
{
    return fail_realloc ? NULL : __real_realloc(p, n);
}

static void test_untracked_stream_never_fences_early(void **state)
{
    (void)state;
    fixture *f = fx_new(8 * GiB);
    fx_start(f);
    /* Eight streams fill the arena's first list of streams; the ninth needs it to grow. */
    for (uintptr_t i = 1; i <= 8; i++)
        ca_stream_created(f->a, 0, (ca_stream_t)(i << 12), 1);
    ca_stream_t s9 = (ca_stream_t)(9u << 12);
    fail_realloc = 1;
    ca_stream_created(f->a, 0, s9, 1);
    fail_realloc = 0;
    char *x = must_alloc(f, MiB, NULL, CA_API_PLAIN);
    fake_work(&f->dev, s9); /* a kernel on the ninth stream still reads x */
    must_free(f, x, NULL, CA_API_PLAIN);
    uint64_t syncs = f->dev.device_syncs;
    char *y[4];
    for (int i = 0; i < 4; i++) {
        y[i] = must_alloc(f, MiB, NULL, CA_API_PLAIN);
        /* x only after a synchronization of the whole device, never by a fence. */
        assert_true(y[i] != x || f->dev.device_syncs > syncs);
    }
    for (int i = 0; i < 4; i++)
        must_free(f, y[i], NULL, CA_API_PLAIN);
    fake_complete(&f->dev, s9);
    fx_finish(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_untracked_stream_never_fences_early),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
