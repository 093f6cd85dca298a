/* libFuzzer entry for the trace CSV reader: the input is a whole file. It is loaded or refused
 * with one line, never a crash; what is loaded is consistent (every free names an allocation
 * made before it, ids are dense). */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trace_csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("trace", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    FILE *err = fopen("/dev/null", "w");
    trace t = {0};
    if (trace_load(path, &t, err) == 0) {
        uint32_t next = 0;
        for (size_t i = 0; i < t.n; i++) {
            if (t.ev[i].kind == 'A' && t.ev[i].id != next++)
                __builtin_trap(); /* ids are given in order */
            if (t.ev[i].kind == 'F' && t.ev[i].id >= next)
                __builtin_trap(); /* a free names an earlier allocation */
            if (t.ev[i].kind != 'A' && t.ev[i].kind != 'F')
                __builtin_trap();
        }
        if (next != t.nallocs)
            __builtin_trap();
    }
    trace_free(&t);
    if (err)
        fclose(err);
    close(fd);
    return 0;
}
