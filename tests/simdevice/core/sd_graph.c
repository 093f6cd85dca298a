/* sd_graph.c: graphs handed out by the end of a capture, their executable copies, and launches:
 * a launch queues a copy of every node's op on the launch stream in creation order, which every
 * node's dependencies allow (each depends only on nodes made before it). */
#include <stdlib.h>

#include "sd_capture.h"

/* An executable graph: the ops one launch queues. */
struct sd_exec {
    struct sd_op **ops;
    size_t n;
};

static struct sd_set graphs_set, execs_set;

int sd_graph_publish(struct sd_graph *g)
{
    return sd_set_add(&graphs_set, g) == 0 ? SD_OK : SD_ENOMEM;
}

/* A fresh op with the kind and payload of `from`, or NULL. */
static struct sd_op *copy_op(const struct sd_op *from)
{
    struct sd_op *op = sd_op_new(from->kind);
    if (op)
        op->u = from->u;
    return op;
}

static void exec_free(struct sd_exec *x)
{
    for (size_t i = 0; i < x->n; i++) {
        if (x->ops[i]->kind == OP_GMEM)
            sd_gmem_unref(x->ops[i]->u.gmem.id);
        free(x->ops[i]);
    }
    free(x->ops);
    free(x);
}

int sd_graph_instantiate(void **exec, void *graph)
{
    sd_init();
    if (!exec)
        return SD_EINVAL;
    pthread_mutex_lock(&sd_lock);
    int rc = sd_set_has(&graphs_set, graph) ? SD_OK : SD_EINVAL;
    struct sd_graph *g = graph;
    struct sd_exec *x = rc ? NULL : calloc(1, sizeof *x);
    if (!rc && (!x || (g->nodes.n && !(x->ops = calloc(g->nodes.n, sizeof *x->ops)))))
        rc = SD_ENOMEM;
    for (size_t i = 0; !rc && i < g->nodes.n; i++) {
        if (!(x->ops[i] = copy_op(g->nodes.v[i]->op)))
            rc = SD_ENOMEM;
        else if (x->ops[x->n++]->kind == OP_GMEM)
            sd_gmem_ref(x->ops[i]->u.gmem.id);
    }
    if (!rc && sd_set_add(&execs_set, x) != 0)
        rc = SD_ENOMEM;
    if (rc && x)
        exec_free(x);
    else if (!rc)
        *exec = x;
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

int sd_graph_exec_check(void *exec)
{
    sd_init();
    pthread_mutex_lock(&sd_lock);
    int rc = sd_set_has(&execs_set, exec) ? SD_OK : SD_EINVAL;
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

int sd_graph_launch(void *exec, void *stream, int ptsz)
{
    sd_init();
    pthread_mutex_lock(&sd_lock);
    int rc = sd_set_has(&execs_set, exec) ? SD_OK : SD_EINVAL;
    struct sd_exec *x = exec;
    struct sd_stream *s = NULL;
    if (!rc)
        rc = sd_resolve_live(stream, ptsz, &s);
    /* A launch captured into another graph (a child graph node) is not modelled. */
    if (!rc && s->capture) {
        sd_capture_invalidate(s->capture->c);
        rc = SD_ENOTSUP;
    }
    if (!rc)
        rc = sd_capture_legacy(s);
    struct sd_op **ops = !rc && x->n ? calloc(x->n, sizeof *ops) : NULL;
    if (!rc && x->n && !ops)
        rc = SD_ENOMEM;
    /* Every op first, so that a launch is queued whole or not at all. */
    for (size_t i = 0; !rc && i < x->n; i++)
        if (!(ops[i] = copy_op(x->ops[i])))
            rc = SD_ENOMEM;
    for (size_t i = 0; ops && i < x->n; i++) {
        if (rc) {
            free(ops[i]);
            continue;
        }
        if (ops[i]->kind == OP_GMEM)
            sd_gmem_launched(ops[i]);
        sd_enqueue(s, ops[i], NULL);
    }
    free(ops);
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

/* Forgets handle h of `set` and frees it; SD_EINVAL when it is not one. */
static int destroy(struct sd_set *set, void *h, void (*free_fn)(void *))
{
    sd_init();
    pthread_mutex_lock(&sd_lock);
    int rc = sd_set_has(set, h) ? SD_OK : SD_EINVAL;
    if (!rc) {
        sd_set_del(set, h);
        free_fn(h);
    }
    pthread_mutex_unlock(&sd_lock);
    return rc;
}

static void exec_free_any(void *x) { exec_free(x); }
static void graph_free_any(void *g) { sd_graph_free(g); }

int sd_graph_exec_destroy(void *exec) { return destroy(&execs_set, exec, exec_free_any); }

int sd_graph_destroy(void *graph) { return destroy(&graphs_set, graph, graph_free_any); }
