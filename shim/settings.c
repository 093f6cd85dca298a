/* The parsed options (settings.h). */
#include <pthread.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "settings.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static ca_options opts;

static void parse(void)
{
    ca_options_defaults(&opts);
    ca_options_parse(&opts, environ, stderr);
    /* In a setuid or setgid program the environment is the caller's, not the owner's: it does
     * not get to name a file the program would create or truncate. */
    if (getauxval(AT_SECURE) && opts.trace_path[0] != '\0') {
        fprintf(stderr, "cachealloc: CACHEALLOC_TRACE is ignored in a setuid program\n");
        opts.trace_path[0] = '\0';
    }
}

const ca_options *ca_shim_options(void)
{
    pthread_once(&once, parse);
    return &opts;
}
