/* The lane's generation and the threads' lanes (lane.h). */
#include "lane.h"

atomic_uint_fast64_t ca_lane_gen = 1;
_Thread_local ca_lane ca_lanes[CA_RT_COUNT];

void ca_lane_invalidate(void)
{
    atomic_fetch_add_explicit(&ca_lane_gen, 1, memory_order_acq_rel);
}

void ca_lane_disarm(void)
{
    for (int s = 0; s < CA_RT_COUNT; s++)
        ca_lanes[s].gen = 0;
}
