/* The shim's state of the whole process (process.h): the parsed options and the runtimes
 * whose arena is ready. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "process.h"

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

static ca_runtime *_Atomic runtimes[CA_RT_COUNT];

void ca_registry_add(ca_runtime *rt)
{
    atomic_store(&runtimes[rt->index], rt);
}

ca_runtime *ca_runtime_by_index(int index)
{
    if (index < 0 || index >= CA_RT_COUNT)
        return NULL;
    return atomic_load(&runtimes[index]);
}

int ca_rt_expandable(const ca_runtime *rt)
{
    int e = ca_shim_options()->expandable;
    return e == CA_EXPANDABLE_AUTO ? rt->expandable_default : e;
}

ca_reuse_kind ca_rt_reuse(const ca_runtime *rt)
{
    int r = ca_shim_options()->reuse;
    return r == CA_REUSE_AUTO ? rt->reuse_default : (ca_reuse_kind)r;
}
