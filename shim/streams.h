/* Streams as arena keys.
 *
 * The arena keys its pools by an opaque ca_stream_t. The shim's keys:
 *   CA_STREAM_LEGACY   the legacy default stream (0, or cudaStreamLegacy);
 *   an odd value       the calling thread's per-thread default stream (cudaStreamPerThread, or
 *                      0 in a _ptsz call): a different stream per host thread, so each thread
 *                      gets its own key, never reused by a later thread;
 *   anything else      the program's own stream handle (heap pointers are never odd).
 */
#ifndef CACHEALLOC_SHIM_STREAMS_H
#define CACHEALLOC_SHIM_STREAMS_H

#include "runtime.h"

/* The arena key (*key) for a stream handle the program passed; tells the arena about a
 * stream it first meets (the per-thread stream on a new device, a handle created behind the
 * shim's back, validated with the real stream_get_flags). *dev is the pool's device: the
 * stream's own one when the shim knows it, else left alone (the caller's current device).
 * ptsz: a _ptsz entry point, where 0 means the per-thread stream. Returns codes.success, or
 * the runtime's own error for a handle that names no stream (nothing registered then). */
ca_rt_err ca_stream_key(ca_runtime *rt, void *stream, int ptsz, int *dev, ca_stream_t *key);

/* 1 when the calling thread can name the stream of arena key `key`: every key but another
 * thread's per-thread default stream, which the runtime's handle would turn into the
 * caller's own. */
int ca_stream_nameable(ca_stream_t key);

/* The handle to pass to the real runtime for an arena key (a per-thread key becomes the
 * calling thread's per-thread stream: check ca_stream_nameable first). */
void *ca_stream_handle(const ca_runtime *rt, ca_stream_t key);

/* The calling thread makes a plain-API call (allocation or free) on dev. Another host thread's
 * default stream may be its per-thread stream, unordered with this thread's (the explicit
 * cudaStreamPerThread handle needs no _ptsz import, and the shim does not see the copies and
 * launches that use it): a device whose plain calls come from a second host thread leaves the
 * single-stream mode. Cheap after the first call of a thread on a device. */
void ca_stream_plain_thread(ca_runtime *rt, int dev);

/* 1 once the calling thread's plain calls were counted on some device of rt. */
int ca_stream_plain_counted(const ca_runtime *rt);

/* The program created stream s on dev through the shim. */
void ca_stream_register(ca_runtime *rt, void *stream, int dev, int nonblocking);

/* The program destroys stream s: tell the arena (before the real destroy). */
void ca_stream_unregister(ca_runtime *rt, void *stream);

/* Device dev was reset (or dev < 0: the process forked): forget its streams and per-thread
 * keys. */
void ca_streams_forget(int dev);

/* In a forked child: reset the table's lock and forget every stream. */
void ca_streams_after_fork(void);

#endif
