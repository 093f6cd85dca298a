/* sd_capture_nodes.c: the nodes of a graph and the sets of them that streams and events carry
 * while a capture is under way. */
#include <stdlib.h>
#include <string.h>

#include "sd_capture.h"

int sd_nodeset_add(struct sd_nodeset *set, struct sd_gnode *n)
{
    for (size_t i = 0; i < set->n; i++)
        if (set->v[i] == n)
            return SD_OK;
    if (set->n == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 4;
        struct sd_gnode **v = realloc(set->v, cap * sizeof *v);
        if (!v)
            return SD_ENOMEM;
        set->v = v;
        set->cap = cap;
    }
    set->v[set->n++] = n;
    return SD_OK;
}

int sd_nodeset_copy(struct sd_nodeset *dst, const struct sd_nodeset *src)
{
    dst->n = 0;
    for (size_t i = 0; i < src->n; i++)
        if (sd_nodeset_add(dst, src->v[i]) != SD_OK)
            return SD_ENOMEM;
    return SD_OK;
}

void sd_nodeset_free(struct sd_nodeset *set)
{
    free(set->v);
    *set = (struct sd_nodeset){0};
}

bool sd_nodeset_reaches(const struct sd_graph *g, const struct sd_nodeset *from,
                        const struct sd_nodeset *of)
{
    size_t n = g->nodes.n;
    if (of->n == 0)
        return true;
    bool *seen = calloc(n ? n : 1, sizeof *seen);
    struct sd_gnode **stack = malloc((n ? n : 1) * sizeof *stack);
    bool ok = seen && stack;
    size_t top = 0;
    for (size_t i = 0; ok && i < from->n; i++)
        if (!seen[from->v[i]->index]) {
            seen[from->v[i]->index] = true;
            stack[top++] = from->v[i];
        }
    while (ok && top) {
        struct sd_gnode *x = stack[--top];
        for (size_t i = 0; i < x->ndeps; i++)
            if (!seen[x->deps[i]->index]) {
                seen[x->deps[i]->index] = true;
                stack[top++] = x->deps[i];
            }
    }
    for (size_t i = 0; ok && i < of->n; i++)
        ok = seen[of->v[i]->index];
    free(seen);
    free(stack);
    return ok;
}

void sd_capmark_free(struct sd_capmark *m)
{
    if (!m)
        return;
    sd_nodeset_free(&m->deps);
    free(m);
}

struct sd_graph *sd_graph_new(void)
{
    struct sd_graph *g = calloc(1, sizeof *g);
    if (g)
        g->capturing = true;
    return g;
}

void sd_graph_free(struct sd_graph *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nodes.n; i++) {
        struct sd_gnode *x = g->nodes.v[i];
        if (x->op->kind == OP_GMEM)
            sd_gmem_unref(x->op->u.gmem.id);
        free(x->op);
        free(x->deps);
        free(x);
    }
    sd_nodeset_free(&g->nodes);
    free(g);
}

struct sd_gnode *sd_capture_add(struct sd_capstream *cs, struct sd_op *op)
{
    struct sd_graph *g = cs->c->graph;
    if (cs->tail.cap == 0 && (cs->tail.v = malloc(4 * sizeof *cs->tail.v)) != NULL)
        cs->tail.cap = 4; /* so that the node can always become the tail below */
    struct sd_gnode *x = cs->tail.cap ? calloc(1, sizeof *x) : NULL;
    struct sd_gnode **deps = cs->tail.n ? malloc(cs->tail.n * sizeof *deps) : NULL;
    if (!x || (cs->tail.n && !deps) || sd_nodeset_add(&g->nodes, x) != SD_OK) {
        free(x);
        free(deps);
        free(op);
        return NULL;
    }
    if (cs->tail.n)
        memcpy(deps, cs->tail.v, cs->tail.n * sizeof *deps);
    x->op = op;
    x->index = g->nodes.n - 1;
    x->deps = deps;
    x->ndeps = cs->tail.n;
    if (op->kind == OP_GMEM)
        sd_gmem_ref(op->u.gmem.id);
    cs->tail.v[0] = x;
    cs->tail.n = 1;
    return x;
}
