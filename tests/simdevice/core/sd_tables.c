/* sd_tables.c: the lookups behind the fronts' table-driven answers (error names, device
 * attributes) and their constant out-parameter answers. Each front keeps its own tables, since
 * the names and the enumerator values differ between CUDA and HIP. */
#include "sd_internal.h"

const struct sd_errname *sd_err_find(const struct sd_errname *t, size_t n, int code)
{
    for (size_t i = 0; i < n; i++)
        if (t[i].code == code)
            return &t[i];
    return NULL;
}

int sd_device_attr(const struct sd_attr *t, size_t n, int *v, int attr, int dev)
{
    int rc = sd_check_device_arg(v, dev);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++)
        if (t[i].attr == attr) {
            *v = t[i].value;
            return SD_OK;
        }
    return SD_EINVAL;
}

int sd_put_version(int *out, int version)
{
    if (!out)
        return SD_EINVAL;
    *out = version;
    return SD_OK;
}

int sd_priority_range(int *least, int *greatest)
{
    if (least)
        *least = 0;
    if (greatest)
        *greatest = 0;
    return SD_OK;
}
