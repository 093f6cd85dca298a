/* The compiler markers of the whole product, in one place (issue "the house"): what the hot
 * path must have inlined, what must stay out of it so that it saves no registers and sets up
 * no stack, and which way a branch is expected to go. */
#ifndef CACHEALLOC_CA_COMPILER_H
#define CACHEALLOC_CA_COMPILER_H

#define CA_INLINE static inline __attribute__((always_inline)) /* part of a hot path      */
#define CA_NOINLINE __attribute__((noinline))                   /* kept out of its caller  */
#define CA_COLD __attribute__((noinline, cold))                 /* rare: out, and far away */
#define ca_likely(x) __builtin_expect(!!(x), 1)
#define ca_unlikely(x) __builtin_expect(!!(x), 0)

#endif
