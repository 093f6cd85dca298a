/* The streams bench_loop creates beside its allocation loops: idle ones, which only switch the
 * cache from the single-stream mode to fences, and busy ones, each kept fed with host
 * functions that sleep (device work in flight that costs the host no CPU). */
#ifndef LOOP_STREAMS_H
#define LOOP_STREAMS_H

typedef struct loop_streams loop_streams;

/* Create nstreams non-blocking streams; the first nbusy of them get a feeder thread that
 * keeps depth host functions of about work_us microseconds each queued. NULL on failure. */
loop_streams *loop_streams_start(int nstreams, int nbusy, int depth, int work_us);

/* Stop the feeders, wait for the queued work, destroy the streams. Returns the host functions
 * that ran. */
unsigned long loop_streams_stop(loop_streams *ls);

#endif
