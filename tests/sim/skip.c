/* skip.c: stands in for a test whose prerequisites are missing; meson reports exit 77 as SKIP. */
#include <stdio.h>

int main(int argc, char **argv)
{
    printf("SKIP: %s\n", argc > 1 ? argv[1] : "a prerequisite is missing");
    return 77;
}
