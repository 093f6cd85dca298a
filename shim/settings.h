/* The options the program's environment sets (CACHEALLOC_*), parsed once per process at the
 * first question: a wrong value gets one line on stderr and its default. */
#ifndef CACHEALLOC_SHIM_SETTINGS_H
#define CACHEALLOC_SHIM_SETTINGS_H

#include "options.h"

/* The parsed options. */
const ca_options *ca_shim_options(void);

#endif
