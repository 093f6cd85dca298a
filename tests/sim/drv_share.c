/* drv_share.c: SIMDEV_SHARED, processes sharing the simulated device as they share a GPU. Run
 * with SIMDEV_MEMORY=64M; the case is the argument. Every process is forked before its cuInit
 * and initializes the driver itself, as a real driver does not survive a fork; the processes
 * take turns over pipes. `shared`: one process's allocation is another's lack of memory, and a
 * process that exits or is killed without freeing gives its memory back. `unshared`: without
 * the variable, or with a name it refuses, each process has the whole device. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "drv_check.h"

#define MiB ((size_t)1 << 20)

/* A forked process and the pipes to and from it. */
struct peer {
    pid_t pid;
    int to, from;
};

static void say(int fd, char c)
{
    CHECK_EQ(write(fd, &c, 1), 1);
}

static void hear(int fd, char want)
{
    char c = 0;
    CHECK_EQ(read(fd, &c, 1), 1);
    CHECK_EQ(c, want);
}

/* Forks a process that runs role(from_parent, to_parent) and exits with its result. */
static struct peer spawn(int (*role)(int in, int out))
{
    int down[2], up[2];
    CHECK(pipe(down) == 0 && pipe(up) == 0);
    struct peer p = {.pid = fork(), .to = down[1], .from = up[0]};
    CHECK(p.pid >= 0);
    if (p.pid == 0) {
        close(down[1]);
        close(up[0]);
        fflush(NULL);
        _exit(role(down[0], up[1]));
    }
    close(down[0]);
    close(up[1]);
    return p;
}

/* Waits for p to end; its status must be `status` as waitpid gives it. */
static void reap(struct peer p, int status)
{
    int st;
    CHECK_EQ(waitpid(p.pid, &st, 0), p.pid);
    CHECK_EQ(st, status);
    close(p.to);
    close(p.from);
}

static void start(void)
{
    drv_begin();
    drv_use_primary(0);
}

static size_t free_now(void)
{
    size_t free_bytes, total;
    CU_OK(cuMemGetInfo(&free_bytes, &total));
    CHECK_EQ(total, 64 * MiB);
    return free_bytes;
}

/* Waits for the parent's 40 MiB, lacks memory, then takes 32 MiB once the parent freed them,
 * and exits holding them. */
static int exits_holding(int in, int out)
{
    start();
    CUdeviceptr p;
    hear(in, 'g');
    CHECK(free_now() <= 24 * MiB);
    CHECK_EQ(cuMemAlloc(&p, 32 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    say(out, 'r');
    hear(in, 'f');
    CU_OK(cuMemAlloc(&p, 32 * MiB));
    CHECK_EQ(free_now(), 32 * MiB);
    say(out, 'h');
    hear(in, 'x');
    return 0;
}

/* Takes 48 MiB and holds them until it is killed. */
static int killed_holding(int in, int out)
{
    start();
    CUdeviceptr p;
    hear(in, 'g');
    CU_OK(cuMemAlloc(&p, 48 * MiB));
    say(out, 'h');
    pause();
    return 1; /* not killed */
}

static void shared(void)
{
    char name[64], path[128];
    snprintf(name, sizeof name, "drv_share-%d", (int)getpid());
    snprintf(path, sizeof path, "/dev/shm/simdev.%u.%s", (unsigned)getuid(), name);
    CHECK(setenv("SIMDEV_SHARED", name, 1) == 0);
    struct peer a = spawn(exits_holding), b = spawn(killed_holding);
    start();
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 40 * MiB));
    CHECK_EQ(free_now(), 24 * MiB);
    say(a.to, 'g');
    hear(a.from, 'r');
    CU_OK(cuMemFree(p));
    say(a.to, 'f');
    hear(a.from, 'h');
    CHECK_EQ(free_now(), 32 * MiB);
    CHECK_EQ(cuMemAlloc(&p, 40 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
    say(a.to, 'x');
    reap(a, 0);
    CU_OK(cuMemAlloc(&p, 40 * MiB)); /* what the exited process held is free again */
    CU_OK(cuMemFree(p));
    CHECK_EQ(free_now(), 64 * MiB);

    say(b.to, 'g');
    hear(b.from, 'h');
    CHECK_EQ(free_now(), 16 * MiB);
    CHECK_EQ(kill(b.pid, SIGKILL), 0);
    reap(b, SIGKILL);
    CHECK_EQ(free_now(), 64 * MiB); /* and what the killed one held */
    CU_OK(cuMemAlloc(&p, 64 * MiB));
    CU_OK(cuMemFree(p));
    CHECK_EQ(unlink(path), 0);
}

/* Takes 48 MiB, and once both processes hold theirs, sees the 16 MiB it left. */
static int holds_own_device(int in, int out)
{
    start();
    CUdeviceptr p;
    CU_OK(cuMemAlloc(&p, 48 * MiB));
    say(out, 'h');
    hear(in, 'c');
    CHECK_EQ(free_now(), 16 * MiB);
    CU_OK(cuMemFree(p));
    return 0;
}

static void unshared(const char *name)
{
    if (name)
        CHECK(setenv("SIMDEV_SHARED", name, 1) == 0);
    else
        CHECK(unsetenv("SIMDEV_SHARED") == 0);
    struct peer a = spawn(holds_own_device), b = spawn(holds_own_device);
    hear(a.from, 'h');
    hear(b.from, 'h');
    say(a.to, 'c');
    say(b.to, 'c');
    reap(a, 0);
    reap(b, 0);
    CHECK(unsetenv("SIMDEV_SHARED") == 0); /* this process's driver reads it at exit */
}

int main(int argc, char **argv)
{
    signal(SIGALRM, watchdog_fired);
    alarm(50);
    if (argc == 2 && strcmp(argv[1], "shared") == 0)
        shared();
    else if (argc == 2 && strcmp(argv[1], "unshared") == 0) {
        unshared(NULL);
        unshared("no/slash"); /* refused with one line: the process runs unshared */
    } else
        return 2;
    printf("drv_share %s: ok\n", argv[1]);
    return 0;
}
