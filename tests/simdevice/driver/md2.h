/* md2.h: MD2 (RFC 1319) and HMAC-MD2 (RFC 2104), for the runtime's integrity check.
 * No global state: every call works on the caller's context or stack. */
#ifndef SD_MD2_H
#define SD_MD2_H

#include <stddef.h>
#include <stdint.h>

#define MD2_BLOCK 16
#define MD2_DIGEST 16

/* A digest in progress; fill it with md2_init before use. */
struct md2_ctx {
    uint8_t state[48];       /* RFC 1319's X: 16 bytes of state, then the block, then their xor */
    uint8_t check[16];       /* the running checksum */
    uint8_t buf[MD2_BLOCK];  /* input waiting for a whole block */
    size_t nbuf;
};

/* Starts a new digest in c. */
void md2_init(struct md2_ctx *c);
/* Feeds n bytes at msg into c; any chunking gives the same digest as one call. */
void md2_update(struct md2_ctx *c, const void *msg, size_t n);
/* Pads, folds in the checksum and writes the digest to out; leaves c started afresh. */
void md2_final(struct md2_ctx *c, uint8_t out[MD2_DIGEST]);

/* MD2 (RFC 1319) of n bytes at msg into out[16]. */
void md2(const void *msg, size_t n, uint8_t out[MD2_DIGEST]);
/* HMAC (RFC 2104) with MD2 as the hash: MD2's block is 16 bytes, so key is exactly one block
 * (no hashing/padding of the key needed): inner pad 0x36, outer pad 0x5c. */
void hmac_md2(const uint8_t key[MD2_BLOCK], const void *msg, size_t n, uint8_t out[MD2_DIGEST]);

#endif
