/* Idle and busy streams for bench_loop (see loop_streams.h). A feeder waits on a semaphore
 * that each host function posts when it ends, so it never spins, and the stream always has
 * depth host functions queued or running. */
#include "loop_streams.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

typedef struct feeder {
    cudaStream_t stream;
    pthread_t thread;
    sem_t slots;
    int work_us;
    atomic_bool stop;
    atomic_ulong ran;
} feeder;

struct loop_streams {
    int nstreams, nbusy;
    cudaStream_t *streams;
    feeder *feeders;
};

static void CUDART_CB host_work(void *arg)
{
    feeder *f = arg;
    /* The default 50 us timer slack would stretch every sleep to the slack. */
    prctl(PR_SET_TIMERSLACK, 1UL);
    struct timespec ts = {0, (long)f->work_us * 1000L};
    nanosleep(&ts, NULL);
    atomic_fetch_add(&f->ran, 1);
    sem_post(&f->slots);
}

static void *feed(void *arg)
{
    feeder *f = arg;
    while (!atomic_load(&f->stop)) {
        sem_wait(&f->slots);
        if (atomic_load(&f->stop) || cudaLaunchHostFunc(f->stream, host_work, f) != cudaSuccess)
            break;
    }
    return NULL;
}

loop_streams *loop_streams_start(int nstreams, int nbusy, int depth, int work_us)
{
    loop_streams *ls = calloc(1, sizeof *ls);
    if (!ls)
        return NULL;
    ls->streams = calloc((size_t)nstreams + 1, sizeof *ls->streams);
    ls->feeders = calloc((size_t)nbusy + 1, sizeof *ls->feeders);
    if (!ls->streams || !ls->feeders)
        goto fail;
    for (; ls->nstreams < nstreams; ls->nstreams++)
        if (cudaStreamCreateWithFlags(&ls->streams[ls->nstreams], cudaStreamNonBlocking) !=
            cudaSuccess)
            goto fail;
    for (; ls->nbusy < nbusy && ls->nbusy < nstreams; ls->nbusy++) {
        feeder *f = &ls->feeders[ls->nbusy];
        f->stream = ls->streams[ls->nbusy];
        f->work_us = work_us;
        sem_init(&f->slots, 0, (unsigned)depth);
        if (pthread_create(&f->thread, NULL, feed, f) != 0) {
            sem_destroy(&f->slots);
            goto fail;
        }
    }
    return ls;
fail:
    loop_streams_stop(ls);
    return NULL;
}

unsigned long loop_streams_stop(loop_streams *ls)
{
    unsigned long ran = 0;
    for (int i = 0; i < ls->nbusy; i++) {
        feeder *f = &ls->feeders[i];
        atomic_store(&f->stop, 1);
        sem_post(&f->slots);
        pthread_join(f->thread, NULL);
    }
    for (int i = 0; i < ls->nstreams; i++) {
        cudaStreamSynchronize(ls->streams[i]);
        cudaStreamDestroy(ls->streams[i]);
    }
    for (int i = 0; i < ls->nbusy; i++) {
        ran += atomic_load(&ls->feeders[i].ran);
        sem_destroy(&ls->feeders[i].slots);
    }
    free(ls->streams);
    free(ls->feeders);
    free(ls);
    return ran;
}
