/* glibc's own allocator entry points, which a shim that replaces malloc forwards to (they are
 * exported by libc.so.6 under these names and bypass the symbols the shim interposes). */
#ifndef BENCH_SHIMS_LIBC_ALLOC_H
#define BENCH_SHIMS_LIBC_ALLOC_H
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);
#endif
