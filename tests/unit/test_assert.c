/* ca_assert is on in the test command's builds: a broken invariant stops the process (this
 * program must die of SIGABRT; meson expects it to fail). Exits 0, and so fails the test, in a
 * build where the checks are compiled out. */
#include <stdio.h>

#include "base/ca_assert.h"

int main(int argc, char **argv)
{
    (void)argv;
    ca_assert(argc == 1); /* holds */
    ca_assert(argc == 1 + 1);
    puts("ca_assert is compiled out in this build");
    return 0;
}
