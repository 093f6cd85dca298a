/* drv_profiles.c: SIMDEV_PROFILE's price lists (docs/simdevice.md, "Price profiles"), read back
 * from the simulated driver and timed: provisional is today's list, each named list changes what
 * it names, a price's own variable overrides the list, a bad name and a file's bad lines give
 * one line each on stderr. One case per process, each with the variables meson gives it. */
#include "drv_check.h"
#include "profile_check.h"

/* Today's list, which no profile may change when SIMDEV_PROFILE is unset. */
static const struct {
    const char *name;
    double us;
} provisional_list[] = {
    {"SIMDEV_MALLOC_US", 50}, {"SIMDEV_MALLOC_US_PER_GIB", 970}, {"SIMDEV_FREE_US", 14},
    {"SIMDEV_FREE_US_PER_GIB", 0}, {"SIMDEV_ASYNC_US", 1}, {"SIMDEV_VMM_RESERVE_US", 19},
    {"SIMDEV_VMM_FREE_US", 10}, {"SIMDEV_VMM_CREATE_US", 13}, {"SIMDEV_VMM_RELEASE_US", 0.5},
    {"SIMDEV_VMM_MAP_US", 1}, {"SIMDEV_VMM_UNMAP_US", 33}, {"SIMDEV_VMM_ACCESS_US", 28},
    {"SIMDEV_HOST_ALLOC_US", 900}, {"SIMDEV_HOST_ALLOC_US_PER_MIB", 490},
    {"SIMDEV_HOST_FREE_US", 380}, {"SIMDEV_HOST_FREE_US_PER_MIB", 150},
    {"SIMDEV_OP_LATENCY_US", 3}, {"SIMDEV_LAUNCH_US", 2}, {"SIMDEV_EVENT_RECORD_US", 0.35},
    {"SIMDEV_EVENT_QUERY_US", 0.15}, {"SIMDEV_STREAM_QUERY_US", 0.15},
    {"SIMDEV_STREAM_WAIT_US", 0.35}, {"SIMDEV_SYNC_US", 1}, {"SIMDEV_CTX_SYNC_US", 0},
};
enum { NPROV = sizeof provisional_list / sizeof provisional_list[0] };

/* Every price is provisional's but the `n` named in `except`. */
static void check_provisional_but(const char *const *except, size_t n)
{
    for (size_t i = 0; i < NPROV; i++) {
        int skip = 0;
        for (size_t k = 0; k < n; k++)
            skip |= strcmp(provisional_list[i].name, except[k]) == 0;
        if (!skip)
            CHECK_PRICE(provisional_list[i].name, provisional_list[i].us);
    }
}

static void provisional(void)
{
    check_provisional_but(NULL, 0);
    CHECK_EQ(price("SIMDEV_NO_SUCH_PRICE"), -1);
    CHECK_EQ(price("SIMDEV_MEMORY"), -1); /* a setting, not a price */
    CHECK_EQ(stderr_lines("simdevice"), 0);
}

/* A sample of the GPU list: each differs from provisional's (the table in the docs has all). */
static void gpu(void)
{
    CHECK_PRICE("SIMDEV_MALLOC_US", 47);
    CHECK_PRICE("SIMDEV_FREE_US_PER_GIB", 650);
    CHECK_PRICE("SIMDEV_VMM_CREATE_US", 12.4);
    CHECK_PRICE("SIMDEV_HOST_ALLOC_US_PER_MIB", 526);
    CHECK_PRICE("SIMDEV_EVENT_RECORD_US", 0.35); /* unmeasured on a GPU: provisional's */
    CHECK_EQ(stderr_lines("simdevice"), 0);
}

/* cuCtxSynchronize and cuMemFree's implicit synchronization each take at least 500 us; a
 * stream's synchronization does not. */
static void sync_dear(void)
{
    static const char *const changed[] = {"SIMDEV_CTX_SYNC_US"};
    check_provisional_but(changed, 1);
    CHECK_PRICE("SIMDEV_CTX_SYNC_US", 500);
    double t0 = now_us();
    for (int i = 0; i < 4; i++)
        CU_OK(cuCtxSynchronize());
    CHECK(now_us() - t0 >= 4 * 500);
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 4096));
    t0 = now_us();
    CU_OK(cuMemFree(p));
    CHECK(now_us() - t0 >= 500);
}

/* 200 event records take at least 200 x 5 us, 200 queries 200 x 3 us. */
static void events_dear(void)
{
    static const char *const changed[] = {"SIMDEV_EVENT_RECORD_US", "SIMDEV_EVENT_QUERY_US",
                                          "SIMDEV_STREAM_QUERY_US", "SIMDEV_STREAM_WAIT_US"};
    check_provisional_but(changed, 4);
    CHECK_PRICE("SIMDEV_EVENT_RECORD_US", 5);
    CHECK_PRICE("SIMDEV_EVENT_QUERY_US", 3);
    CHECK_PRICE("SIMDEV_STREAM_QUERY_US", 3);
    CHECK_PRICE("SIMDEV_STREAM_WAIT_US", 5);
    CUevent e;
    CU_OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    double t0 = now_us();
    for (int i = 0; i < 200; i++)
        CU_OK(cuEventRecord(e, NULL));
    CHECK(now_us() - t0 >= 200 * 5);
    CU_OK(cuEventSynchronize(e));
    t0 = now_us();
    for (int i = 0; i < 200; i++)
        CU_OK(cuEventQuery(e));
    CHECK(now_us() - t0 >= 200 * 3);
    CU_OK(cuEventDestroy(e));
}

/* SIMDEV_FREE_US_PER_GIB=2000000 (2 s a GiB, far above the simulator's own cost): cuMemFree of
 * 32 MiB takes 62.5 ms or more. */
static void free_size(void)
{
    CHECK_PRICE("SIMDEV_FREE_US_PER_GIB", 2000000);
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, (size_t)32 << 20));
    double t0 = now_us();
    CU_OK(cuMemFree(p));
    CHECK(now_us() - t0 >= 62500);
}

/* SIMDEV_PROFILE=events-dear SIMDEV_EVENT_RECORD_US=7 SIMDEV_SYNC_US=2 SIMDEV_VERBOSE=1: the
 * variables win over the list, the list keeps the rest, and the log names both. */
static void override(void)
{
    CHECK_PRICE("SIMDEV_EVENT_RECORD_US", 7);
    CHECK_PRICE("SIMDEV_EVENT_QUERY_US", 3);
    CHECK_PRICE("SIMDEV_SYNC_US", 2);
    CHECK_EQ(stderr_lines("prices: profile events-dear, SIMDEV_EVENT_RECORD_US=7, "
                          "SIMDEV_SYNC_US=2"), 1);
}

/* SIMDEV_PROFILE=fast: one line naming the variable, the value, the names accepted and the
 * default; then provisional's list. */
static void bad_name(void)
{
    CHECK_EQ(stderr_lines("simdevice"), 1);
    CHECK_EQ(stderr_lines("SIMDEV_PROFILE=\"fast\" is not valid (provisional, gpu, sync-dear, "
                          "events-dear, or a file's path"), 1);
    CHECK_EQ(stderr_lines("using the default provisional"), 1);
    check_provisional_but(NULL, 0);
}

/* SIMDEV_PROFILE=profile_sample.txt (by its path): its two good lines set their prices, each of
 * its three bad lines gives one line and changes nothing. */
static void file(void)
{
    static const char *const changed[] = {"SIMDEV_SYNC_US", "SIMDEV_EVENT_QUERY_US"};
    check_provisional_but(changed, 2);
    CHECK_PRICE("SIMDEV_SYNC_US", 4);
    CHECK_PRICE("SIMDEV_EVENT_QUERY_US", 2.5);
    CHECK_EQ(stderr_lines("simdevice"), 3);
    CHECK_EQ(stderr_lines("line 6: \"SIMDEV_NOT_A_PRICE\" is not a price"), 1);
    CHECK_EQ(stderr_lines("line 7: SIMDEV_LAUNCH_US=\"fast\" is not valid"), 1);
    CHECK_EQ(stderr_lines("line 8: \"no equals sign\" is not a price"), 1);
}

/* SIMDEV_PROFILE names a file that is not there: one line, provisional's list. */
static void file_missing(void)
{
    CHECK_EQ(stderr_lines("simdevice"), 1);
    CHECK_EQ(stderr_lines("cannot be read"), 1);
    check_provisional_but(NULL, 0);
}

static void first_call(void)
{
    drv_begin();
    drv_use_primary(0);
}

int main(int argc, char **argv)
{
    read_config(first_call);
    static const struct sim_case cases[] = {
        {"provisional", provisional}, {"gpu", gpu}, {"sync_dear", sync_dear},
        {"events_dear", events_dear}, {"override", override}, {"bad_name", bad_name},
        {"file", file}, {"file_missing", file_missing}, {"free_size", free_size},
    };
    return sim_run_case("drv_profiles", argc, argv, cases, sizeof cases / sizeof cases[0]);
}
