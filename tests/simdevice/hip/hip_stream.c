/* hip_stream.c: the HIP stream, event and callback calls. */
#include "hip_front.h"

typedef void (*hipStreamCallback_t)(hipStream_t, hipError_t, void *);

/* Creates a blocking stream. */
API hipError_t hipStreamCreate(hipStream_t *s) { return hip_ret(sd_stream_create(s, 0, 0)); }
/* Creates a stream; hipStreamNonBlocking (1) makes it ignore the null stream. */
API hipError_t hipStreamCreateWithFlags(hipStream_t *s, unsigned f) { return hip_ret(sd_stream_create(s, f, 0)); }
/* Creates a stream with a priority (recorded, not modelled). */
API hipError_t hipStreamCreateWithPriority(hipStream_t *s, unsigned f, int p) { return hip_ret(sd_stream_create(s, f, p)); }
/* Destroys a stream at once; its queued work still runs. */
API hipError_t hipStreamDestroy(hipStream_t s) { return hip_ret(sd_stream_destroy(s)); }
/* Waits for the stream's queued work. */
API hipError_t hipStreamSynchronize(hipStream_t s) { return hip_ret(sd_stream_sync(s, 0)); }
/* hipErrorNotReady while the stream has queued work. */
API hipError_t hipStreamQuery(hipStream_t s) { return hip_ret(sd_stream_query(s, 0)); }
/* Makes the stream's later work wait for the event, on the device side. */
API hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned f) { return hip_ret(sd_stream_wait_event(s, e, f, 0)); }
/* The stream's creation flags. */
API hipError_t hipStreamGetFlags(hipStream_t s, unsigned *f) { return hip_ret(sd_stream_flags(s, 0, f)); }
/* Stream priority: not modelled, always 0. */
API hipError_t hipStreamGetPriority(hipStream_t s, int *p)
{
    unsigned f;
    int rc = sd_stream_flags(s, 0, &f);
    if (!rc && p)
        *p = 0;
    return hip_ret(rc ? rc : (p ? SD_OK : SD_EINVAL));
}
/* Queues a callback run by the stream's worker, in order. */
API hipError_t hipStreamAddCallback(hipStream_t s, hipStreamCallback_t cb, void *a, unsigned f) { return hip_ret(sd_stream_callback(s, 0, (sd_callback)cb, a, f)); }

/* Creates an event. */
API hipError_t hipEventCreate(hipEvent_t *e) { return hip_ret(sd_event_create(e, 0)); }
/* Creates an event with flags (hipEventDisableTiming is honoured). */
API hipError_t hipEventCreateWithFlags(hipEvent_t *e, unsigned f) { return hip_ret(sd_event_create(e, f)); }
/* Records the event as an op on the stream. */
API hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) { return hip_ret(sd_event_record(e, s, 0)); }
/* hipErrorNotReady until the stream passed the event's record. */
API hipError_t hipEventQuery(hipEvent_t e) { return hip_ret(sd_event_query(e)); }
/* Blocks until the event completes. */
API hipError_t hipEventSynchronize(hipEvent_t e) { return hip_ret(sd_event_sync(e)); }
/* Destroys an event. */
API hipError_t hipEventDestroy(hipEvent_t e) { return hip_ret(sd_event_destroy(e)); }
/* Milliseconds between two completed events. */
API hipError_t hipEventElapsedTime(float *ms, hipEvent_t a, hipEvent_t b) { return hip_ret(sd_event_elapsed(ms, a, b)); }
