/* drv_layout.c: the ABI types and codes the simulated driver declares itself (so that it
 * builds without the toolkit) against the real cuda.h: each row of drv_layout.def, compiled
 * once against each header, must agree. */
#include <stddef.h>

#include <cuda.h>

#include "check.h"

extern const long long drv_layout_sim[];
extern const size_t drv_layout_sim_rows;

static const struct {
    const char *what;
    long long real;
} rows[] = {
#define ABI(what, sim, real) {#what, (long long)(real)},
#include "drv_layout.def"
#undef ABI
};

int main(void)
{
    /* The layouts the driver's own static assertions name, stated once more against cuda.h. */
    CHECK_EQ(sizeof(CUmemAllocationProp), 32);
    CHECK_EQ(offsetof(CUmemAllocationProp, location), 8);
    CHECK_EQ(sizeof(CUmemAccessDesc), 12);
    CHECK_EQ(sizeof(CUuuid), 16);
    CHECK_EQ(drv_layout_sim_rows, sizeof rows / sizeof rows[0]);
    int bad = 0;
    for (size_t i = 0; i < drv_layout_sim_rows; i++)
        if (drv_layout_sim[i] != rows[i].real) {
            fprintf(stderr, "FAIL: %s: the simulator says %lld, cuda.h %lld\n", rows[i].what,
                    drv_layout_sim[i], rows[i].real);
            bad = 1;
        }
    if (bad)
        return 1;
    printf("drv_layout: %zu rows agree\n", drv_layout_sim_rows);
    return 0;
}
