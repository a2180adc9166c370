/* realloc_moves.so: what realloc copied.  Preloaded in front of an allocator
 * (LD_PRELOAD="build/bench/realloc_moves.so lib.so" prog), it wraps realloc and counts the calls
 * that moved the block and the bytes a move copies (the old block's usable size, up to the new
 * size), overall and for blocks of 512 KiB and more; it prints one line at exit.  The numbers
 * behind mth_page_alloc_growing and mth_large_usable (src/page.c, src/internal.h) come from it:
 *   LD_PRELOAD="build/bench/realloc_moves.so build/src/libmtheap.so" build/bench/realloc -t 2 -n 300 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static _Atomic unsigned long rm_moves, rm_big_moves;
static _Atomic unsigned long long rm_copied, rm_big_copied;

void *realloc(void *p, size_t n) {
  static void *(*next)(void *, size_t);
  if (!next) next = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
  size_t usable = p ? malloc_usable_size(p) : 0;
  void *q = next(p, n);
  if (p && q && q != p) {
    size_t c = usable < n ? usable : n;
    atomic_fetch_add(&rm_moves, 1);
    atomic_fetch_add(&rm_copied, c);
    if (usable >= ((size_t)512 << 10)) {
      atomic_fetch_add(&rm_big_moves, 1);
      atomic_fetch_add(&rm_big_copied, c);
    }
  }
  return q;
}

__attribute__((destructor)) static void rm_report(void) {
  char b[200];
  int l = snprintf(b, sizeof b, "realloc_moves: %lu moves, %.0f MiB copied; from blocks of 512 KiB+: %lu moves, %.0f MiB\n",
                   atomic_load(&rm_moves), atomic_load(&rm_copied) / 1048576.0, atomic_load(&rm_big_moves),
                   atomic_load(&rm_big_copied) / 1048576.0);
  if (l > 0) {
    ssize_t w = write(2, b, (size_t)l);
    (void)w;
  }
}
