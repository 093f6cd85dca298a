/* drv_ident.c: the simulator's own extras, for test programs that find them with dlsym. */
#include "drv.h"

__attribute__((constructor)) static void drv_flavor(void)
{
    sd_set_flavor("cuda");
}

/* Identifies the stand-in, so a test can show the simulated driver answered. */
API const char *simdev_identify(void)
{
    return "simdevice cuda driver";
}

/* Copies device `device`'s counters (-1: totals) to *out; 0 on success. */
API int simdev_get_counters(int device, struct simdev_counters *out)
{
    return sd_get_counters(device, out);
}

/* The price in force named by its variable, microseconds; -1 when no price has that name. */
API double simdev_get_price(const char *name)
{
    return sd_config_price(name);
}
