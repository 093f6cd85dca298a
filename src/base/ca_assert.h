/* ca_assert: an invariant checked where it lives, as mimalloc's mi_assert_internal and
 * PyTorch's TORCH_INTERNAL_ASSERT check theirs. On in debug builds and in every build of the
 * test command (CA_DEBUG: meson option assertions, or buildtype debug); compiled out otherwise,
 * so that a release build, and the benchmarks' build, pay nothing. A broken invariant means a
 * block may be handed out twice or memory lost: the process stops at once, naming the check. */
#ifndef CACHEALLOC_CA_ASSERT_H
#define CACHEALLOC_CA_ASSERT_H

#ifdef CA_DEBUG
/* Prints "cachealloc: invariant broken at FILE:LINE: COND" on stderr and aborts. */
__attribute__((noreturn, cold)) void ca_assert_fail(const char *cond, const char *file, int line);
#define ca_assert(cond) ((cond) ? (void)0 : ca_assert_fail(#cond, __FILE__, __LINE__))
#else
#define ca_assert(cond) ((void)0)
#endif

#endif
