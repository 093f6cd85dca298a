/* Unit tests of MD2 and HMAC-MD2 (tests/simdevice/driver/md2.c): RFC 1319's test suite, a
 * fixed HMAC vector, and streaming against one-shot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "md2.h"

/* The digest as 32 lowercase hex digits. */
static void hex(const uint8_t d[MD2_DIGEST], char out[2 * MD2_DIGEST + 1])
{
    for (int i = 0; i < MD2_DIGEST; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void check_md2(const char *msg, const char *want)
{
    uint8_t d[MD2_DIGEST];
    char got[2 * MD2_DIGEST + 1];
    md2(msg, strlen(msg), d);
    hex(d, got);
    assert_string_equal(got, want);
}

static void rfc1319_suite(void **state)
{
    (void)state;
    check_md2("", "8350e5a3e24c153df2275c9f80692773");
    check_md2("a", "32ec01ec4a6dac72c0ab96fb34c0b5d1");
    check_md2("abc", "da853b0d3f88d99b30283a69e6ded6bb");
    check_md2("message digest", "ab4f496bfb2a530b219ff33031fe06b0");
    check_md2("abcdefghijklmnopqrstuvwxyz", "4e8ddff3650292ab5a4108c3aa47940b");
    check_md2("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
              "da33def2a42df13975352846c30338cd");
    check_md2("1234567890123456789012345678901234567890"
              "1234567890123456789012345678901234567890",
              "d5976f79d83d3a0dc9806c3c66f3efd8");
}

static void hmac_vector(void **state)
{
    (void)state;
    static const uint8_t key[MD2_BLOCK] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                           0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};
    uint8_t msg[76], d[MD2_DIGEST];
    char got[2 * MD2_DIGEST + 1];
    for (int i = 0; i < 76; i++)
        msg[i] = (uint8_t)((7 * i + 3) % 256);
    hmac_md2(key, msg, sizeof msg, d);
    hex(d, got);
    assert_string_equal(got, "ec265ba396aa5f31104fd9913d5ffa6e");
}

/* Every length around the block size, fed in chunks of 1, 3, 5, 7, 13 and 17 bytes, must give
 * the one-shot digest: the buffering across blocks is where a streaming bug would hide. */
static void streaming_matches_one_shot(void **state)
{
    (void)state;
    uint8_t msg[100];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (uint8_t)(i * 31 + 7);
    static const size_t chunks[] = {1, 3, 5, 7, 13, 17};
    for (size_t n = 0; n <= sizeof msg; n++) {
        uint8_t want[MD2_DIGEST];
        md2(msg, n, want);
        for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
            struct md2_ctx c;
            uint8_t got[MD2_DIGEST];
            md2_init(&c);
            for (size_t off = 0; off < n; off += chunks[k])
                md2_update(&c, msg + off, n - off < chunks[k] ? n - off : chunks[k]);
            md2_final(&c, got);
            assert_memory_equal(got, want, MD2_DIGEST);
        }
    }
}

/* md2_final leaves the context ready: a second digest from it needs no md2_init. */
static void final_restarts_context(void **state)
{
    (void)state;
    struct md2_ctx c;
    uint8_t first[MD2_DIGEST], second[MD2_DIGEST], want[MD2_DIGEST];
    md2_init(&c);
    md2_update(&c, "abc", 3);
    md2_final(&c, first);
    md2_update(&c, "abc", 3);
    md2_final(&c, second);
    md2("abc", 3, want);
    assert_memory_equal(first, want, MD2_DIGEST);
    assert_memory_equal(second, want, MD2_DIGEST);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc1319_suite),
        cmocka_unit_test(hmac_vector),
        cmocka_unit_test(streaming_matches_one_shot),
        cmocka_unit_test(final_restarts_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
