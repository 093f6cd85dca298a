/* A program built with nvcc --default-stream per-thread (CUDA_API_PER_THREAD_DEFAULT_STREAM, or
 * HIP's _spt forms) gives every host thread its own blocking stream and tells nobody: with plain
 * cudaMalloc/cudaFree from several threads, stream order alone no longer protects a reused
 * block. Its calls go to entry points of their own names, so the undefined symbols of the
 * loaded objects say whether it is such a program, without a cost on any call. */
#include "ptsz_scan.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct scan {
    uintptr_t self_base;
    uintptr_t runtime_base;
    int found;
} scan;

static const char self_marker; /* an address inside this library */

static int has_suffix(const char *name, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);
    return len > n && memcmp(name + len - n, suffix, n) == 0;
}

/* The dynamic section's pointers: relocated in place by the loader on most targets, left as
 * offsets on others and in the vdso. */
static uintptr_t dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
    return p < info->dlpi_addr ? info->dlpi_addr + p : p;
}

/* Number of dynamic symbols: DT_HASH says it; DT_GNU_HASH only through its last chain. */
static size_t symbol_count(const uint32_t *hash, const uint32_t *gnu_hash)
{
    if (hash)
        return hash[1];
    if (!gnu_hash)
        return 0;
    uint32_t nbuckets = gnu_hash[0], symoffset = gnu_hash[1], bloom_words = gnu_hash[2];
    const uint32_t *buckets =
        (const uint32_t *)((const char *)(gnu_hash + 4) + bloom_words * sizeof(ElfW(Addr)));
    const uint32_t *chain = buckets + nbuckets;
    uint32_t last = 0;
    for (uint32_t i = 0; i < nbuckets; i++)
        if (buckets[i] > last)
            last = buckets[i];
    if (last < symoffset)
        return symoffset; /* no defined symbol in the table: the undefined ones come first */
    while (!(chain[last - symoffset] & 1))
        last++;
    return (size_t)last + 1;
}

static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    scan *sc = data;
    if (info->dlpi_addr == sc->self_base || info->dlpi_addr == sc->runtime_base ||
        strncmp(info->dlpi_name, "linux-vdso", 10) == 0)
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 0;
    const char *strtab = NULL;
    const ElfW(Sym) *symtab = NULL;
    const uint32_t *hash = NULL, *gnu_hash = NULL;
    size_t strsz = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        switch (dyn->d_tag) {
        case DT_STRTAB: strtab = (const char *)dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_HASH: hash = (const uint32_t *)dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_GNU_HASH: gnu_hash = (const uint32_t *)dyn_ptr(info, dyn->d_un.d_ptr); break;
        case DT_STRSZ: strsz = dyn->d_un.d_val; break;
        default: break;
        }
    }
    if (!strtab || !symtab || !strsz)
        return 0;
    size_t n = symbol_count(hash, gnu_hash);
    for (size_t i = 1; i < n; i++) {
        const ElfW(Sym) *s = &symtab[i];
        if (s->st_shndx != SHN_UNDEF || s->st_name == 0 || s->st_name >= strsz)
            continue;
        const char *name = strtab + s->st_name;
        size_t len = strnlen(name, strsz - s->st_name);
        if ((has_suffix(name, len, "_ptsz") || has_suffix(name, len, "_ptds") ||
             has_suffix(name, len, "_spt")) &&
            (strncmp(name, "cuda", 4) == 0 || strncmp(name, "hip", 3) == 0 ||
             strncmp(name, "__cuda", 6) == 0)) {
            sc->found = 1;
            return 1; /* stops the walk */
        }
    }
    return 0;
}

int ca_imports_per_thread_stream(const void *runtime_base)
{
    Dl_info self;
    scan sc = {0, (uintptr_t)runtime_base, 0};
    if (dladdr(&self_marker, &self))
        sc.self_base = (uintptr_t)self.dli_fbase;
    dl_iterate_phdr(visit, &sc);
    return sc.found;
}
