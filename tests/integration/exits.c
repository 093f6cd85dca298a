/* A program that leaves by another door than exit: `quick` calls quick_exit, `underscore`
 * waits past the timeline's flush interval and calls _exit, `kill` waits likewise and is killed
 * by SIGKILL. Before that it allocates three blocks of 1111, 2222 and 3333 bytes and frees the
 * second, so its timeline and leak report have known contents (exits_check.sh reads them). */
#include <signal.h>
#include <unistd.h>

#include "gpu.h"

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "quick";
    void *a, *b, *c;
    CHECK(gpuMalloc(&a, 1111));
    CHECK(gpuMalloc(&b, 2222));
    CHECK(gpuMalloc(&c, 3333));
    CHECK(gpuFree(b));
    fflush(stdout);
    if (strcmp(mode, "quick") == 0)
        quick_exit(0);
    sleep_ms(600); /* three flush intervals of the timeline (CA_TRACE_FLUSH_MS) */
    if (strcmp(mode, "underscore") == 0)
        _exit(0);
    raise(SIGKILL);
    return 1;
}
