/* libFuzzer entry for the options parser: the input is an environment, entries separated by
 * NUL bytes ("CACHEALLOC_LIMIT=6G\0CACHEALLOC_POOL=binned\0..."). Whatever it holds, parsing
 * must not crash or overread, every value must end within its table's bounds, and the summary
 * must be a terminated string that fits. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "options/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_VARS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = fuzz_cstring(data, size);
    if (!buf)
        return 0;
    char *envp[MAX_VARS + 1];
    int n = 0;
    for (char *p = buf; p < buf + size && n < MAX_VARS; p += strlen(p) + 1)
        envp[n++] = p;
    envp[n] = NULL;
    FILE *err = fopen("/dev/null", "w");
    ca_options o;
    ca_options_defaults(&o);
    ca_options_parse(&o, envp, err);
    if (err)
        fclose(err);
    if (o.limit_percent > 100 || o.trace_path[sizeof o.trace_path - 1] != '\0')
        __builtin_trap();
    char summary[256];
    ca_options_summary(&o, summary, sizeof summary);
    if (strlen(summary) >= sizeof summary)
        __builtin_trap();
    ca_options_describe(&o, summary, sizeof summary);
    if (strlen(summary) >= sizeof summary)
        __builtin_trap();
    free(buf);
    return 0;
}
