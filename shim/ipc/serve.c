/* Connections served concurrently, a bounded number at once. One thread accepts; each
 * connection gets a detached thread of its own that answers and closes it. At the bound the
 * accepting thread waits for one to end, leaving new connections in the backlog, so the
 * exporter never holds more than CA_IPC_SERVING connections' threads and descriptors. A
 * thread that cannot be made answers on the accepting thread: slower, never refused. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ipc/serve.h"

/* One server's state, on the heap: a child of fork starts a server of its own with fresh
 * state, whatever the parent's threads held at the fork. */
typedef struct server {
    int listener;
    ca_ipc_answer_fn answer;
    pthread_mutex_t lock;
    pthread_cond_t freed;
    int busy; /* connections being answered */
} server;

typedef struct conn {
    server *s;
    int c;
} conn;

/* Answers a connection, closes it and frees its place. */
static void finish(server *s, int c)
{
    s->answer(c);
    close(c);
    pthread_mutex_lock(&s->lock);
    s->busy--;
    pthread_cond_signal(&s->freed);
    pthread_mutex_unlock(&s->lock);
}

static void *answer_one(void *arg)
{
    conn k = *(conn *)arg;
    free(arg);
    finish(k.s, k.c);
    return NULL;
}

/* Starts a detached thread running fn(arg): 0, or -1. */
static int start_detached(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, fn, arg) == 0 ? 0 : -1;
    pthread_attr_destroy(&attr);
    return rc;
}

static void *accept_all(void *arg)
{
    server *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (s->busy >= CA_IPC_SERVING)
            pthread_cond_wait(&s->freed, &s->lock);
        pthread_mutex_unlock(&s->lock);
        int c = accept4(s->listener, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EBADF || errno == EINVAL || errno == ENOTSOCK)
                return NULL;
            if (errno == EMFILE || errno == ENFILE || errno == ENOMEM || errno == ENOBUFS)
                nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
            continue;
        }
        pthread_mutex_lock(&s->lock);
        s->busy++;
        pthread_mutex_unlock(&s->lock);
        conn *k = malloc(sizeof *k);
        if (k)
            *k = (conn){s, c};
        if (!k || start_detached(answer_one, k) != 0) {
            free(k);
            finish(s, c);
        }
    }
}

int ca_ipc_serve(int listener, ca_ipc_answer_fn answer)
{
    server *s = malloc(sizeof *s);
    if (!s)
        return -1;
    *s = (server){.listener = listener, .answer = answer};
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->freed, NULL);
    /* Threads inherit the mask: the accepting thread and every answering one take none of the
     * program's signals. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = start_detached(accept_all, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&s->freed);
        pthread_mutex_destroy(&s->lock);
        free(s);
    }
    return rc;
}
