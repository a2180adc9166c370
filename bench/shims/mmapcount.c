/* libmmapcount.so: counts the process's mmap/munmap/mremap/madvise calls that go through libc's
 * exported symbols, forwarding each to the next definition (dlsym(RTLD_NEXT)).  Preload it
 * before the allocator (LD_PRELOAD=libmmapcount.so:liballoc.so) so the allocator's calls bind
 * here.  mmap-lock reads the counters with mtheap_bench_mmap_counts().
 *
 * What it cannot see: glibc's own malloc calls the internal __mmap/__munmap (no PLT), and any
 * library issuing raw syscall(SYS_mmap).  The driver's strace pass covers those. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static _Atomic uint64_t n_mmap, n_munmap, n_mremap, n_madvise;

/* Resolved lazily; until then (or if dlsym itself maps memory) fall back to the raw syscall so
 * an early call from inside the dynamic loader or an allocator's constructor cannot recurse. */
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static int (*real_munmap)(void *, size_t);
static void *(*real_mremap)(void *, size_t, size_t, int, ...);
static int (*real_madvise)(void *, size_t, int);
static _Atomic int resolving;

static void resolve(void) {
  if (real_munmap || atomic_exchange(&resolving, 1)) return;
  real_mmap = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(RTLD_NEXT, "mmap");
  real_mremap = (void *(*)(void *, size_t, size_t, int, ...))dlsym(RTLD_NEXT, "mremap");
  real_madvise = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "madvise");
  real_munmap = (int (*)(void *, size_t))dlsym(RTLD_NEXT, "munmap");
}

EXPORT void *mmap(void *a, size_t n, int prot, int flags, int fd, off_t off) {
  atomic_fetch_add_explicit(&n_mmap, 1, memory_order_relaxed);
  resolve();
  if (real_mmap) return real_mmap(a, n, prot, flags, fd, off);
  return (void *)syscall(SYS_mmap, a, n, prot, flags, fd, off);
}
EXPORT void *mmap64(void *a, size_t n, int prot, int flags, int fd, off_t off)
    __attribute__((alias("mmap")));

EXPORT int munmap(void *a, size_t n) {
  atomic_fetch_add_explicit(&n_munmap, 1, memory_order_relaxed);
  resolve();
  if (real_munmap) return real_munmap(a, n);
  return (int)syscall(SYS_munmap, a, n);
}

EXPORT void *mremap(void *a, size_t o, size_t n, int flags, ...) {
  atomic_fetch_add_explicit(&n_mremap, 1, memory_order_relaxed);
  void *na = NULL;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    na = va_arg(ap, void *);
    va_end(ap);
  }
  resolve();
  if (real_mremap) return real_mremap(a, o, n, flags, na);
  return (void *)syscall(SYS_mremap, a, o, n, flags, na);
}

EXPORT int madvise(void *a, size_t n, int advice) {
  atomic_fetch_add_explicit(&n_madvise, 1, memory_order_relaxed);
  resolve();
  if (real_madvise) return real_madvise(a, n, advice);
  return (int)syscall(SYS_madvise, a, n, advice);
}

EXPORT void mtheap_bench_mmap_counts(uint64_t out[4]) {
  out[0] = atomic_load(&n_mmap);
  out[1] = atomic_load(&n_munmap);
  out[2] = atomic_load(&n_mremap);
  out[3] = atomic_load(&n_madvise);
}
