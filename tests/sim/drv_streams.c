/* drv_streams.c: the driver's streams and events: a non-blocking stream ignores the legacy
 * stream, a held stream reports NOT_READY, events complete in stream order, time the work
 * between them, make another stream wait on the device side, and are refused once destroyed;
 * legacy work waits for every blocking stream, however many have work pending. */
#include <pthread.h>

#include "drv_check.h"

static void set_flag(void *f)
{
    __atomic_store_n((volatile int *)f, 1, __ATOMIC_SEQ_CST);
}

static void sleep_30ms(void *unused)
{
    (void)unused;
    usleep(30 * 1000);
}

/* Long enough for work that must not run to show it ran; no check depends on speed. */
static void settle(void)
{
    usleep(50 * 1000);
}

/* Waits up to 5 s for a flag, so that work wrongly held fails the test instead of hanging it. */
static int eventually(volatile int *flag)
{
    for (int i = 0; i < 500 && !gate_flag(flag); i++)
        usleep(10 * 1000);
    return gate_flag(flag);
}

static void non_blocking(void)
{
    CUstream nb, b;
    unsigned flags = 7;
    struct gate g = {0};
    volatile int ran_nb = 0, ran_b = 0;
    CU_OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&b, CU_STREAM_DEFAULT));
    CU_OK(cuStreamGetFlags(nb, &flags));
    CHECK_EQ(flags, CU_STREAM_NON_BLOCKING);
    CU_OK(cuLaunchHostFunc(NULL, drv_gate_fn, &g)); /* holds the legacy stream */
    CU_OK(cuLaunchHostFunc(nb, set_flag, (void *)&ran_nb));
    CU_OK(cuLaunchHostFunc(b, set_flag, (void *)&ran_b));
    CHECK(eventually(&ran_nb));
    settle();
    CHECK(!gate_flag(&ran_b)); /* a blocking stream waits for the legacy stream's work */
    CHECK_EQ(cuStreamQuery(b), CUDA_ERROR_NOT_READY);
    CHECK_EQ(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
    CU_OK(cuStreamQuery(nb));
    gate_open(&g);
    CU_OK(cuStreamSynchronize(b));
    CHECK(gate_flag(&ran_b));
    CU_OK(cuStreamQuery(NULL));
    CU_OK(cuStreamDestroy(nb));
    CU_OK(cuStreamDestroy(b));
}

static void events(void)
{
    CUstream s, waiter;
    CUevent start, end;
    struct gate g = {0};
    volatile int waited = 0;
    struct simdev_counters c0 = sim_counters(0);
    CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_OK(cuStreamCreate(&waiter, CU_STREAM_NON_BLOCKING));
    CU_OK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CU_OK(cuEventCreate(&end, CU_EVENT_DEFAULT));
    CU_OK(cuEventQuery(start)); /* never recorded: complete */

    CU_OK(cuLaunchHostFunc(s, drv_gate_fn, &g));
    CU_OK(cuEventRecord(start, s));
    CU_OK(cuLaunchHostFunc(s, sleep_30ms, NULL));
    CU_OK(cuEventRecord(end, s));
    CHECK_EQ(cuEventQuery(start), CUDA_ERROR_NOT_READY);
    CHECK_EQ(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    /* The wait is on the device side: the host goes on, the waiting stream does not. */
    CU_OK(cuStreamWaitEvent(waiter, start, 0));
    CU_OK(cuLaunchHostFunc(waiter, set_flag, (void *)&waited));
    settle();
    CHECK(!gate_flag(&waited));
    CHECK_EQ(cuStreamQuery(waiter), CUDA_ERROR_NOT_READY);

    gate_open(&g);
    CU_OK(cuEventSynchronize(end));
    CU_OK(cuEventQuery(start));
    CU_OK(cuEventQuery(end));
    CU_OK(cuStreamSynchronize(waiter));
    CHECK(gate_flag(&waited));
    float ms = 0;
    CU_OK(cuEventElapsedTime(&ms, start, end));
    CHECK(ms >= 29.0f && ms < 10000.0f);
    struct simdev_counters c = sim_counters(0);
    CHECK_EQ(c.events_recorded - c0.events_recorded, 2);
    CHECK_EQ(c.stream_waits - c0.stream_waits, 1);
    CU_OK(cuEventDestroy(start));
    CU_OK(cuEventDestroy(end));
    /* A destroyed event is refused with the driver's code, and nothing is queued (CUB's
     * CachingDeviceAllocator records an event another thread may have destroyed). */
    CHECK_EQ(cuEventRecord(start, s), CUDA_ERROR_INVALID_HANDLE);
    CHECK_EQ(sim_counters(0).events_recorded, c.events_recorded);
    CU_OK(cuStreamDestroy(s));
    CU_OK(cuStreamDestroy(waiter));
}

/* More blocking streams with work pending than the simulator once listed as dependencies of one
 * legacy op (it waited on the host for the rest, walking the device's stream list across the
 * wait). The stream it waited on exits meanwhile; the legacy op must still wait for the streams
 * after it in the list. */
enum { MANY = 330, SKIPPED = 9 };

struct legacy_call {
    CUcontext ctx;
    volatile int *ran;
};

static void *launch_on_legacy(void *arg)
{
    struct legacy_call *lc = arg;
    CU_OK(cuCtxSetCurrent(lc->ctx));
    CU_OK(cuLaunchHostFunc(CU_STREAM_LEGACY, set_flag, (void *)lc->ran));
    return NULL;
}

static void legacy_past_many_streams(void)
{
    static CUstream s[MANY];
    struct gate last = {0}, rest = {0};
    volatile int ran = 0;
    for (int i = 0; i < MANY; i++) {
        CU_OK(cuStreamCreate(&s[i], CU_STREAM_DEFAULT));
        CU_OK(cuLaunchHostFunc(s[i], drv_gate_fn, i < SKIPPED ? &last : &rest));
    }
    struct legacy_call lc = {NULL, &ran};
    CU_OK(cuCtxGetCurrent(&lc.ctx));
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, launch_on_legacy, &lc), 0);
    settle();
    /* The newest streams head the list: s[SKIPPED] is the first past the old limit. */
    CU_OK(cuStreamDestroy(s[SKIPPED]));
    gate_open(&rest);
    CHECK_EQ(pthread_join(t, NULL), 0);
    settle();
    CHECK(!gate_flag(&ran)); /* s[0] .. s[SKIPPED - 1] are still held */
    gate_open(&last);
    CHECK(eventually(&ran));
    CU_OK(cuCtxSynchronize());
}

static const struct sim_case cases[] = {
    {"non_blocking", non_blocking}, {"events", events},
    {"legacy_past_many_streams", legacy_past_many_streams},
};

int main(int argc, char **argv)
{
    drv_begin();
    drv_use_primary(0);
    return sim_run_case("drv_streams", argc, argv, cases, sizeof cases / sizeof cases[0]);
}
