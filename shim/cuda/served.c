/* The served driver entry points and their real functions (served.h). */
#include <stdatomic.h>
#include <string.h>

#include "driver.h"
#include "served.h"

const ca_drv_served ca_drv_served_table[N_SERVED] = {
#define ROW(name, base, version, flags, proto, params) {#name, base, version, flags},
    CUABI_SERVED(ROW)
#undef ROW
};

/* What the real lookup answers (filled once), and what the real dlsym answered. */
static _Atomic(void *) real[N_SERVED];
static _Atomic(void *) named[N_SERVED];
static atomic_int reals_loaded;

static void load_reals(void)
{
    if (atomic_load_explicit(&reals_loaded, memory_order_acquire))
        return;
    for (int i = 0; i < N_SERVED; i++) {
        const ca_drv_served *s = &ca_drv_served_table[i];
        void *p = ca_drv_lookup(s->base, s->version, s->flags, s->name);
        if (p != NULL)
            atomic_store_explicit(&real[i], p, memory_order_release);
    }
    atomic_store_explicit(&reals_loaded, 1, memory_order_release);
}

int ca_drv_served_index(const char *name)
{
    for (int i = 0; i < N_SERVED; i++)
        if (strcmp(ca_drv_served_table[i].name, name) == 0)
            return i;
    return -1;
}

void (*ca_drv_served_real(int i))(void)
{
    load_reals();
    void *p = atomic_load_explicit(&real[i], memory_order_acquire);
    if (p == NULL)
        p = atomic_load_explicit(&named[i], memory_order_acquire);
    void (*f)(void);
    memcpy(&f, &p, sizeof f);
    return f;
}

void (*ca_drv_real_fn(const char *name))(void)
{
    int i = ca_drv_served_index(name);
    return i < 0 ? NULL : ca_drv_served_real(i);
}

void ca_drv_served_named(int i, void *p)
{
    atomic_store_explicit(&named[i], p, memory_order_release);
}

int ca_drv_served_is_real(int i, const void *p)
{
    load_reals();
    return p == atomic_load_explicit(&real[i], memory_order_acquire) ||
           p == atomic_load_explicit(&named[i], memory_order_acquire);
}
