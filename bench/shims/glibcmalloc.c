/* libbenchglibc.so: exports the malloc family as thin forwards to glibc's allocator.  Some
 * programs are linked against another malloc (Debian's redis-server links libjemalloc.so.2);
 * preloading this makes their "glibc" run really use glibc's malloc. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stddef.h>

#include "libc_alloc.h"

EXPORT void *malloc(size_t n) { return __libc_malloc(n); }
EXPORT void free(void *p) { __libc_free(p); }
EXPORT void *calloc(size_t a, size_t b) { return __libc_calloc(a, b); }
EXPORT void *realloc(void *p, size_t n) { return __libc_realloc(p, n); }
EXPORT void *memalign(size_t a, size_t n) { return __libc_memalign(a, n); }
EXPORT void *aligned_alloc(size_t a, size_t n) { return __libc_memalign(a, n); }
EXPORT void *valloc(size_t n) { return __libc_valloc(n); }
EXPORT void *pvalloc(size_t n) { return __libc_pvalloc(n); }
EXPORT int posix_memalign(void **out, size_t a, size_t n) {
  if (a < sizeof(void *) || (a & (a - 1))) return EINVAL;
  void *p = __libc_memalign(a, n);
  if (!p && n) return ENOMEM;
  *out = p;
  return 0;
}
/* glibc's own: looked up in libc.so.6 itself, since the next definition in the global search
 * order may be the other malloc the program links. */
#include <dlfcn.h>
static size_t (*libc_usable)(void *);
__attribute__((constructor)) static void find_usable(void) {
  void *h = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (h) libc_usable = (size_t (*)(void *))dlsym(h, "malloc_usable_size");
}
EXPORT size_t malloc_usable_size(void *p) {
  if (!libc_usable) find_usable();
  return libc_usable && p ? libc_usable(p) : 0;
}
