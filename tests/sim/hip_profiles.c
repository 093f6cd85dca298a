/* hip_profiles.c: the HIP stand-in reads the same price list as the CUDA driver, from the core
 * they share (drv_profiles.c checks the lists themselves). One case per process:
 *   sync_dear  SIMDEV_PROFILE=sync-dear: hipDeviceSynchronize and hipFree take 500 us or more
 *   file       SIMDEV_PROFILE=profile_sample.txt (by its path): its prices, its bad lines */
#include <hip/hip_runtime_api.h>

#include "profile_check.h"

static void sync_dear(void)
{
    CHECK_PRICE("SIMDEV_CTX_SYNC_US", 500);
    CHECK_PRICE("SIMDEV_SYNC_US", 1);
    double t0 = now_us();
    for (int i = 0; i < 4; i++)
        CHECK_EQ(hipDeviceSynchronize(), hipSuccess);
    CHECK(now_us() - t0 >= 4 * 500);
    void *p;
    CHECK_EQ(hipMalloc(&p, 4096), hipSuccess);
    t0 = now_us();
    CHECK_EQ(hipFree(p), hipSuccess);
    CHECK(now_us() - t0 >= 500);
}

static void file(void)
{
    CHECK_PRICE("SIMDEV_SYNC_US", 4);
    CHECK_PRICE("SIMDEV_EVENT_QUERY_US", 2.5);
    CHECK_PRICE("SIMDEV_LAUNCH_US", 2);
    CHECK_EQ(stderr_lines("SIMDEV_PROFILE file"), 3);
}

static void first_call(void)
{
    int dev;
    CHECK_EQ(hipGetDevice(&dev), hipSuccess);
}

int main(int argc, char **argv)
{
    sim_begin("simdevice hip");
    read_config(first_call);
    static const struct sim_case cases[] = {{"sync_dear", sync_dear}, {"file", file}};
    return sim_run_case("hip_profiles", argc, argv, cases, sizeof cases / sizeof cases[0]);
}
