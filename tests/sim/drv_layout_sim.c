/* drv_layout_sim.c: the simulated driver's side of drv_layout: its own declarations, which
 * cannot share a translation unit with cuda.h since both name the same types. */
#include <stddef.h>

#include "driver/drv.h"

extern const long long drv_layout_sim[];
extern const size_t drv_layout_sim_rows;

const long long drv_layout_sim[] = {
#define ABI(what, sim, real) (long long)(sim),
#include "drv_layout.def"
#undef ABI
};
const size_t drv_layout_sim_rows = sizeof drv_layout_sim / sizeof drv_layout_sim[0];
