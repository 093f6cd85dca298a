/* A program that never calls CUDA or HIP, run with the shim preloaded: the shim must leave no
 * thread and no statistics segment behind, and print nothing. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
    int threads = 0;
    DIR *d = opendir("/proc/self/task");
    if (d == NULL)
        return 77;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.')
            threads++;
    closedir(d);
    char seg[128];
    snprintf(seg, sizeof seg, "/dev/shm/cachealloc.%u.%d", (unsigned)getuid(), (int)getpid());
    int has_segment = access(seg, F_OK) == 0;
    if (threads != 1 || has_segment) {
        fprintf(stderr, "threads %d, segment %s: %s\n", threads, seg, has_segment ? "yes" : "no");
        return 1;
    }
    return 0;
}
