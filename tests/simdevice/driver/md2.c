/* md2.c: MD2 from RFC 1319 (with its published erratum: the checksum byte is xored with the
 * S-box output, not replaced by it) and HMAC-MD2 from RFC 2104. */
#include <string.h>

#include "md2.h"

/* RFC 1319's permutation of 0..255 built from the digits of pi. */
static const uint8_t S[256] = {
    41,  46,  67,  201, 162, 216, 124, 1,   61,  54,  84,  161, 236, 240, 6,   19,
    98,  167, 5,   243, 192, 199, 115, 140, 152, 147, 43,  217, 188, 76,  130, 202,
    30,  155, 87,  60,  253, 212, 224, 22,  103, 66,  111, 24,  138, 23,  229, 18,
    190, 78,  196, 214, 218, 158, 222, 73,  160, 251, 245, 142, 187, 47,  238, 122,
    169, 104, 121, 145, 21,  178, 7,   63,  148, 194, 16,  137, 11,  34,  95,  33,
    128, 127, 93,  154, 90,  144, 50,  39,  53,  62,  204, 231, 191, 247, 151, 3,
    255, 25,  48,  179, 72,  165, 181, 209, 215, 94,  146, 42,  172, 86,  170, 198,
    79,  184, 56,  210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4,   241,
    69,  157, 112, 89,  100, 113, 135, 32,  134, 91,  207, 101, 230, 45,  168, 2,
    27,  96,  37,  173, 174, 176, 185, 246, 28,  70,  97,  105, 52,  64,  126, 15,
    85,  71,  163, 35,  221, 81,  175, 58,  195, 92,  249, 206, 186, 197, 234, 38,
    44,  83,  13,  110, 133, 40,  132, 9,   211, 223, 205, 244, 65,  129, 77,  82,
    106, 220, 55,  200, 108, 193, 171, 250, 36,  225, 123, 8,   12,  189, 177, 74,
    120, 136, 149, 139, 227, 99,  232, 109, 233, 203, 213, 254, 59,  0,   29,  57,
    242, 239, 183, 14,  102, 88,  208, 228, 166, 119, 114, 248, 235, 117, 75,  10,
    49,  68,  80,  180, 143, 237, 31,  26,  219, 153, 141, 51,  159, 17,  131, 20,
};

/* The 18-round compression of one block into the state (RFC 1319 step 4). */
static void compress(uint8_t x[48], const uint8_t block[MD2_BLOCK])
{
    for (int j = 0; j < MD2_BLOCK; j++) {
        x[16 + j] = block[j];
        x[32 + j] = (uint8_t)(x[16 + j] ^ x[j]);
    }
    uint8_t t = 0;
    for (int round = 0; round < 18; round++) {
        for (int k = 0; k < 48; k++)
            t = x[k] ^= S[t];
        t = (uint8_t)(t + round);
    }
}

/* Folds one block into the checksum (RFC 1319 step 2); it chains across blocks through the
 * last checksum byte, so it must see the blocks in order, before the checksum block itself. */
static void checksum(uint8_t check[16], const uint8_t block[MD2_BLOCK])
{
    uint8_t l = check[15];
    for (int j = 0; j < MD2_BLOCK; j++)
        l = check[j] ^= S[block[j] ^ l];
}

static void absorb(struct md2_ctx *c, const uint8_t block[MD2_BLOCK])
{
    checksum(c->check, block);
    compress(c->state, block);
}

void md2_init(struct md2_ctx *c)
{
    memset(c, 0, sizeof *c);
}

void md2_update(struct md2_ctx *c, const void *msg, size_t n)
{
    const uint8_t *p = msg;
    if (c->nbuf) {
        size_t take = MD2_BLOCK - c->nbuf < n ? MD2_BLOCK - c->nbuf : n;
        memcpy(c->buf + c->nbuf, p, take);
        c->nbuf += take;
        p += take;
        n -= take;
        if (c->nbuf < MD2_BLOCK)
            return;
        absorb(c, c->buf);
        c->nbuf = 0;
    }
    for (; n >= MD2_BLOCK; p += MD2_BLOCK, n -= MD2_BLOCK)
        absorb(c, p);
    memcpy(c->buf, p, n);
    c->nbuf = n;
}

void md2_final(struct md2_ctx *c, uint8_t out[MD2_DIGEST])
{
    /* Padding is never empty: a whole block of 16s when the input filled its last block. */
    uint8_t pad = (uint8_t)(MD2_BLOCK - c->nbuf);
    memset(c->buf + c->nbuf, pad, pad);
    absorb(c, c->buf);
    compress(c->state, c->check);
    memcpy(out, c->state, MD2_DIGEST);
    md2_init(c);
}

void md2(const void *msg, size_t n, uint8_t out[MD2_DIGEST])
{
    struct md2_ctx c;
    md2_init(&c);
    md2_update(&c, msg, n);
    md2_final(&c, out);
}

void hmac_md2(const uint8_t key[MD2_BLOCK], const void *msg, size_t n, uint8_t out[MD2_DIGEST])
{
    uint8_t pad[MD2_BLOCK], inner[MD2_DIGEST];
    struct md2_ctx c;
    for (int i = 0; i < MD2_BLOCK; i++)
        pad[i] = key[i] ^ 0x36;
    md2_init(&c);
    md2_update(&c, pad, sizeof pad);
    md2_update(&c, msg, n);
    md2_final(&c, inner);
    for (int i = 0; i < MD2_BLOCK; i++)
        pad[i] = key[i] ^ 0x5c;
    md2_update(&c, pad, sizeof pad);
    md2_update(&c, inner, sizeof inner);
    md2_final(&c, out);
}
