/* libFuzzer entry for the exporter's content negotiation: the input is an Accept header as a
 * scraper (or anyone who can reach the port) sends it. Whatever it holds, the choice must not
 * crash or overread, and must be the same for the same header. */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_input.h"
#include "negotiate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = fuzz_cstring(data, size);
    if (!buf)
        return 0;
    int a = top_wants_openmetrics(buf), b = top_wants_openmetrics(buf);
    if ((a != 0 && a != 1) || a != b)
        __builtin_trap();
    free(buf);
    return 0;
}
