/* Programs built for per-thread default streams, found by what they import. */
#ifndef CACHEALLOC_PTSZ_SCAN_H
#define CACHEALLOC_PTSZ_SCAN_H

/* Whether a loaded object other than this library and the object at runtime_base imports a
 * per-thread default stream entry point (*_ptsz, *_ptds: CUDA; *_spt: HIP). */
int ca_imports_per_thread_stream(const void *runtime_base);

#endif
