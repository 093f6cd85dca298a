/* Stream capture as the cache sees it. The doors tell it when a capture begins and ends (the
 * CUDA driver's cuStreamBeginCapture and cuStreamEndCapture, HIP's hipStreamBeginCapture and
 * hipStreamEndCapture). While any capture is under way in a runtime its arena is quiet (no
 * device call at all: arena.h), what a capturing stream allocates and frees is the real
 * allocator's (graph memory), and a reclaim waits until the capture is over. */
#ifndef CACHEALLOC_SHIM_CAPTURE_H
#define CACHEALLOC_SHIM_CAPTURE_H

#include <stdint.h>

#include "runtime.h"

/* A capture is about to begin in rt: the arena goes quiet before the real call. */
void ca_capture_will_begin(ca_runtime *rt);

/* The real begin of a capture on stream (ptsz: through a per-thread-stream entry point) in
 * capture mode `mode` returned e: on success the capture is remembered until its end, on
 * failure the arena's quiet ends. */
void ca_capture_began(ca_runtime *rt, void *stream, int ptsz, unsigned mode, ca_rt_err e);

/* The real end of the capture on stream returned e: once the stream no longer captures, the
 * capture is forgotten and the arena's quiet ends. */
void ca_capture_ended(ca_runtime *rt, void *stream, int ptsz, ca_rt_err e);

/* The program destroys stream: a capture it began is forgotten. */
void ca_capture_stream_destroyed(ca_runtime *rt, void *stream);

/* The calling thread's capture interaction mode is now `mode` (cuThreadExchangeStreamCaptureMode
 * returned success). */
void ca_capture_thread_mode(ca_runtime *rt, unsigned mode);

/* 1 while a capture is under way in rt. One relaxed load. */
int ca_capture_underway(const ca_runtime *rt);

/* 1 while no capture is under way in rt and no reclaim waits for one to end. */
int ca_capture_idle(const ca_runtime *rt);

/* 1 when the work given to stream is captured, or when a capture is under way and the real
 * runtime cannot tell: allocations and frees on it belong to the graph (the real allocator's
 * graph memory). 0 otherwise, at once when no capture is under way. */
int ca_capture_stream_captures(ca_runtime *rt, void *stream, int ptsz);

/* A reclaim of dev (< 0: all) asked for by the public API (monitor 0) or the statistics
 * monitor (1). With no capture under way it is done now. During one it is kept for the
 * program's next allocation once none is under way (or the monitor's next round then), and
 * answers 0 to the API, CA_STATS_RECLAIM_LATER to the monitor, which gets the bytes later. */
uint64_t ca_capture_reclaim(ca_runtime *rt, int dev, int monitor);

/* At an allocation, outside any lock: does a reclaim a capture kept, once none is under way.
 * One relaxed load when there is none. */
void ca_capture_settle(ca_runtime *rt);

/* In a forked child: no capture survives fork; the arena's quiet ends. */
void ca_capture_after_fork(void);

#endif
