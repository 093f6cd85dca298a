/* cuda_stream.c: the CUDA stream, event and host-function calls. */
#include "cuda_front.h"

typedef void (*cudaHostFn_t)(void *);
typedef void (*cudaStreamCallback_t)(cudaStream_t, cudaError_t, void *);

/* Creates a blocking stream. */
API cudaError_t cudaStreamCreate(cudaStream_t *s) { return cuda_ret(sd_stream_create(s, 0, 0)); }
/* Creates a stream; cudaStreamNonBlocking (1) makes it ignore the legacy stream. */
API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned f) { return cuda_ret(sd_stream_create(s, f, 0)); }
/* Creates a stream with a priority (recorded, not modelled). */
API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned f, int p) { return cuda_ret(sd_stream_create(s, f, p)); }
/* Destroys a stream at once; its queued work still runs. */
API cudaError_t cudaStreamDestroy(cudaStream_t s) { return cuda_ret(sd_stream_destroy(s)); }
/* Waits for the stream's queued work. */
API cudaError_t cudaStreamSynchronize(cudaStream_t s) { return cuda_ret(sd_stream_sync(s, 0)); }
/* Waits for the stream's queued work (per-thread default for 0). */
API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) { return cuda_ret(sd_stream_sync(s, 1)); }
/* cudaErrorNotReady while the stream has queued work. */
API cudaError_t cudaStreamQuery(cudaStream_t s) { return cuda_ret(sd_stream_query(s, 0)); }
/* As cudaStreamQuery, per-thread default for 0. */
API cudaError_t cudaStreamQuery_ptsz(cudaStream_t s) { return cuda_ret(sd_stream_query(s, 1)); }
/* Makes the stream's later work wait for the event, on the device side. */
API cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned f) { return cuda_ret(sd_stream_wait_event(s, e, f, 0)); }
/* As cudaStreamWaitEvent, per-thread default for 0. */
API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned f) { return cuda_ret(sd_stream_wait_event(s, e, f, 1)); }
/* The stream's creation flags. */
API cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned *f) { return cuda_ret(sd_stream_flags(s, 0, f)); }
/* As cudaStreamGetFlags, per-thread default for 0. */
API cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t s, unsigned *f) { return cuda_ret(sd_stream_flags(s, 1, f)); }
/* Queues a callback run by the stream's worker, in order. */
API cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t cb, void *a, unsigned f) { return cuda_ret(sd_stream_callback(s, 0, (sd_callback)cb, a, f)); }
/* As cudaStreamAddCallback, per-thread default for 0. */
API cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t s, cudaStreamCallback_t cb, void *a, unsigned f) { return cuda_ret(sd_stream_callback(s, 1, (sd_callback)cb, a, f)); }
/* Queues a host function run by the stream's worker, in order. */
API cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *a) { return cuda_ret(sd_host_func(s, 0, fn, a)); }
/* As cudaLaunchHostFunc, per-thread default for 0. */
API cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void *a) { return cuda_ret(sd_host_func(s, 1, fn, a)); }

/* Creates an event. */
API cudaError_t cudaEventCreate(cudaEvent_t *e) { return cuda_ret(sd_event_create(e, 0)); }
/* Creates an event with flags (cudaEventDisableTiming is honoured). */
API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f) { return cuda_ret(sd_event_create(e, f)); }
/* Records the event as an op on the stream. */
API cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return cuda_ret(sd_event_record(e, s, 0)); }
/* As cudaEventRecord, per-thread default for 0. */
API cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) { return cuda_ret(sd_event_record(e, s, 1)); }
/* As cudaEventRecord; flags must be 0 or cudaEventRecordExternal (treated alike). */
API cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned f) { return cuda_ret(f > 1 ? SD_EINVAL : sd_event_record(e, s, 0)); }
/* As cudaEventRecordWithFlags, per-thread default for 0. */
API cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t e, cudaStream_t s, unsigned f) { return cuda_ret(f > 1 ? SD_EINVAL : sd_event_record(e, s, 1)); }
/* cudaErrorNotReady until the stream passed the event's record. */
API cudaError_t cudaEventQuery(cudaEvent_t e) { return cuda_ret(sd_event_query(e)); }
/* Blocks until the event completes. */
API cudaError_t cudaEventSynchronize(cudaEvent_t e) { return cuda_ret(sd_event_sync(e)); }
/* Destroys an event (a pending record still completes). */
API cudaError_t cudaEventDestroy(cudaEvent_t e) { return cuda_ret(sd_event_destroy(e)); }
/* Milliseconds between two completed events. */
API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) { return cuda_ret(sd_event_elapsed(ms, a, b)); }
