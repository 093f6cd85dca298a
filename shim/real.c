/* Real-function lookup. The runtime is the loaded object that defines its allocation function
 * (cudaMalloc, hipMalloc), whatever its file is called: a wheel repaired by auditwheel ships
 * libcudart-<hash>.so.13. It is found by symbol, first in the global scope after the shim, then
 * among every loaded object (a runtime loaded RTLD_LOCAL by a Python extension or a plugin is
 * in no global scope). All of a runtime's functions then come from that one object. */
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "real.h"
#include "loader.h"

/* Any function of the shim: names the shim's own object. */
static void shim_marker(void) {}

static int same_object(const struct link_map *lm, const char *name, ElfW(Addr) addr)
{
    return lm != NULL && lm->l_addr == addr && strcmp(lm->l_name ? lm->l_name : "", name) == 0;
}

/* The object that defines p. */
static struct link_map *object_of(void *p)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (p == NULL || dladdr1(p, &info, (void **)&lm, RTLD_DL_LINKMAP) == 0)
        return NULL;
    return lm;
}

/* The loaded objects' names and load addresses, copied out of dl_iterate_phdr: dlopen and
 * dladdr take the loader's other lock, and calling them inside the callback could deadlock
 * with a concurrent dlopen. */
struct loaded {
    size_t n, cap;
    char **name;
    ElfW(Addr) *addr;
};

static int collect(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct loaded *l = data;
    const char *name = info->dlpi_name;
    /* The executable (empty name) cannot be reopened by name. */
    if (name == NULL || name[0] == '\0')
        return 0;
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 32;
        char **nn = realloc(l->name, ncap * sizeof *nn);
        if (nn == NULL)
            return 1;
        l->name = nn;
        ElfW(Addr) *na = realloc(l->addr, ncap * sizeof *na);
        if (na == NULL)
            return 1;
        l->addr = na;
        l->cap = ncap;
    }
    if ((l->name[l->n] = strdup(name)) == NULL)
        return 1;
    l->addr[l->n++] = info->dlpi_addr;
    return 0;
}

/* A handle on the first loaded object, other than the shim, that defines probe itself. */
static void *find_definer(const char *probe, const struct link_map *self)
{
    struct loaded l = {0};
    dl_iterate_phdr(collect, &l);
    void *found = NULL;
    for (size_t i = 0; i < l.n && found == NULL; i++) {
        if (same_object(self, l.name[i], l.addr[i]))
            continue;
        /* RTLD_NOLOAD: a reference to the copy already in memory, never a second load. */
        void *h = dlopen(l.name[i], RTLD_NOLOAD | RTLD_LAZY);
        if (h == NULL)
            continue;
        /* A handle's lookup also searches the object's dependencies: take the object only
         * when it defines the probe itself (the definer gets its own turn). */
        void *p = ca_real_dlsym()(h, probe);
        if (p != NULL && same_object(object_of(p), l.name[i], l.addr[i]))
            found = h;
        else
            dlclose(h);
    }
    for (size_t i = 0; i < l.n; i++)
        free(l.name[i]);
    free(l.name);
    free(l.addr);
    return found;
}

void *ca_real_find(const char *probe)
{
    void *self_fn;
    void (*fp)(void) = shim_marker;
    memcpy(&self_fn, &fp, sizeof self_fn);
    const struct link_map *self = object_of(self_fn);
    /* The usual case: the program is linked against the runtime. Reopen the object that
     * defines the probe, so that every function comes from it. */
    const struct link_map *next = object_of(ca_real_dlsym()(RTLD_NEXT, probe));
    if (next != NULL && next != self && next->l_name != NULL && next->l_name[0] != '\0') {
        void *h = dlopen(next->l_name, RTLD_NOLOAD | RTLD_LAZY);
        if (h != NULL)
            return h;
    }
    return find_definer(probe, self);
}

int ca_real_resolve(ca_runtime *rt)
{
    void *h = ca_real_find(rt->syms[0].name);
    if (h == NULL)
        return CA_REAL_ABSENT;
    int missing = 0;
    for (const ca_rt_sym *s = rt->syms; s->name != NULL; s++) {
        void *p = ca_real_dlsym()(h, s->name);
        if (p == NULL && s->required)
            missing = 1;
        /* dlsym hands out data pointers; POSIX guarantees they convert to function pointers.
         * memcpy says so without a cast ISO C frowns upon. */
        memcpy((char *)&rt->fn + s->offset, &p, sizeof p);
    }
    /* The handle stays open: the functions must outlive any dlclose by the program. */
    return missing ? CA_REAL_INCOMPLETE : CA_REAL_OK;
}
