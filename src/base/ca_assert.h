/* ca_assert: an invariant checked where it lives, as mimalloc's mi_assert_internal and
 * PyTorch's TORCH_INTERNAL_ASSERT check theirs. Two tiers, as mimalloc's internal and
 * expensive assertions:
 *
 *   ca_assert            cheap, O(1): checked where the work is done (a block split, merged,
 *                        freed or taken; a bin's insert and remove; a live-map insert; a
 *                        thread cache's keep and reissue), on every call.
 *   ca_assert_expensive  O(blocks): the whole-device walk (arena/check.c), run where it is
 *                        asked for. CA_ASSERT_EXPENSIVE (0 or 1) guards the code that only
 *                        such checks need.
 *
 * One switch turns on both: CA_DEBUG (meson option assertions, which every build of the test
 * command sets, or buildtype debug). Without it both compile to nothing, so that a release
 * build, and the benchmarks' build, pay nothing. A broken invariant means a block may be
 * handed out twice or memory lost: the process stops at once, naming the check. */
#ifndef CACHEALLOC_CA_ASSERT_H
#define CACHEALLOC_CA_ASSERT_H

#ifdef CA_DEBUG
/* Prints "cachealloc: invariant broken at FILE:LINE: COND" on stderr and aborts. */
__attribute__((noreturn, cold)) void ca_assert_fail(const char *cond, const char *file, int line);
#define ca_assert(cond) ((cond) ? (void)0 : ca_assert_fail(#cond, __FILE__, __LINE__))
#define CA_ASSERT_EXPENSIVE 1
#define ca_assert_expensive(cond) ca_assert(cond)
#else
#define ca_assert(cond) ((void)0)
#define CA_ASSERT_EXPENSIVE 0
#define ca_assert_expensive(cond) ((void)0)
#endif

#endif
