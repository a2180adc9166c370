/* liblockedmalloc.so: glibc's allocator behind one global pthread mutex, the way Solaris libc's
 * malloc was (its libc_malloc_lock is the lock reference 003's plockstat report points at).
 *
 * glibc's own arena locks are internal (not pthread_mutex_lock through the PLT), so no
 * LD_PRELOAD tool -- plockstat included -- can see heap contention inside glibc.  Preloading
 * this shim reproduces the reference's heap-contention example on Linux: under plockstat the
 * lock shows up by name, with the program's malloc callers; with libmtheap it is gone.  A
 * demonstration and test fixture, not something to run programs with. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stddef.h>

#include "libc_alloc.h"

/* Exported, so plockstat names it by its symbol: liblockedmalloc.so`libc_malloc_lock. */
EXPORT pthread_mutex_t libc_malloc_lock = PTHREAD_MUTEX_INITIALIZER;

#define LOCKED(expr)                        \
  do {                                      \
    pthread_mutex_lock(&libc_malloc_lock);  \
    expr;                                   \
    pthread_mutex_unlock(&libc_malloc_lock); \
  } while (0)

EXPORT void *malloc(size_t n) {
  void *p;
  LOCKED(p = __libc_malloc(n));
  return p;
}
EXPORT void free(void *p) {
  if (p) LOCKED(__libc_free(p));
}
EXPORT void *calloc(size_t a, size_t b) {
  void *p;
  LOCKED(p = __libc_calloc(a, b));
  return p;
}
EXPORT void *realloc(void *old, size_t n) {
  void *p;
  LOCKED(p = __libc_realloc(old, n));
  return p;
}
EXPORT void *memalign(size_t a, size_t n) {
  void *p;
  LOCKED(p = __libc_memalign(a, n));
  return p;
}
EXPORT void *aligned_alloc(size_t a, size_t n) { return memalign(a, n); }
EXPORT int posix_memalign(void **out, size_t a, size_t n) {
  if (a < sizeof(void *) || (a & (a - 1))) return EINVAL;
  void *p = memalign(a, n);
  if (!p && n) return ENOMEM;
  *out = p;
  return 0;
}
