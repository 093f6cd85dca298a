/* fork while another thread initializes the shim. Thread X makes the process's first runtime
 * call (through a plugin loaded RTLD_LOCAL, so the shim looks for the runtime with dlopen
 * RTLD_NOLOAD while it holds its initialization lock); this program's own dlopen, which the
 * shim's call binds to, holds X there until the main thread has forked. The child then makes
 * its own first call: it must not wait forever on the lock X held in the parent.
 * argv[1]: the plugin (plugin_lib.c). */
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu.h"

static pthread_t main_thread;
static volatile int x_inside, forked;

typedef void *(*dlopen_fn)(const char *, int);

/* Exported (-rdynamic): the shim's calls to dlopen bind here first. */
void *dlopen(const char *file, int mode)
{
    static dlopen_fn next;
    if (next == NULL) {
        void *p = dlsym(RTLD_NEXT, "dlopen");
        memcpy(&next, &p, sizeof next);
    }
    if ((mode & RTLD_NOLOAD) && !pthread_equal(pthread_self(), main_thread) &&
        !__atomic_exchange_n(&x_inside, 1, __ATOMIC_SEQ_CST)) {
        while (!__atomic_load_n(&forked, __ATOMIC_SEQ_CST))
            sleep_ms(1);
    }
    return next(file, mode);
}

static int (*plugin_alloc_free)(void);

static void *thread_x(void *unused)
{
    (void)unused;
    return (void *)(intptr_t)plugin_alloc_free();
}

int main(int argc, char **argv)
{
    EXPECT(argc > 1);
    main_thread = pthread_self();
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    void *sym = dlsym(h, "ca_plugin_alloc_free");
    EXPECT(sym != NULL);
    memcpy(&plugin_alloc_free, &sym, sizeof sym);
    pthread_t x;
    EXPECT(pthread_create(&x, NULL, thread_x, NULL) == 0);
    for (int i = 0; i < 10000 && !__atomic_load_n(&x_inside, __ATOMIC_SEQ_CST); i++)
        sleep_ms(1);
    EXPECT(x_inside);
    pid_t pid = fork();
    EXPECT(pid >= 0);
    if (pid == 0) {
        alarm(20); /* a child stuck on the parent's lock dies of SIGALRM */
        _exit(plugin_alloc_free() == 0 ? 0 : 3);
    }
    __atomic_store_n(&forked, 1, __ATOMIC_SEQ_CST);
    void *xr;
    EXPECT(pthread_join(x, &xr) == 0);
    EXPECT(xr == NULL);
    int status = 0;
    EXPECT(waitpid(pid, &status, 0) == pid);
    if (WIFSIGNALED(status))
        printf("child killed by signal %d (stuck in the shim's initialization)\n",
               WTERMSIG(status));
    else
        printf("child exited with %d\n", WEXITSTATUS(status));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
