/* libbenchcorrupt.so: a deliberately broken allocator for the tests.  It forwards to glibc's
 * malloc and damages every Nth measured block (N from BENCH_CORRUPT_EVERY, default 1000):
 *   BENCH_CORRUPT_MODE=corrupt (default): flips the block's first byte at the next malloc or free
 *     of any other block, while the program still owns it;
 *   BENCH_CORRUPT_MODE=overlap: hands out the previous measured block again while it is still
 *     live (two owners of the same memory).
 * "Measured" blocks are those the workload announces with bench_shim_mark() just before its
 * malloc (see common.h): the workload's own bookkeeping is left alone, so the expected outcome is
 * the self-check's FAIL (exit 3), never a crash inside glibc. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "libc_alloc.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long every = 0, count;
static int overlap_mode;
static unsigned char *pending;      /* a live measured block waiting to be corrupted */
static unsigned char *last;         /* the last live measured block (overlap mode) */
static size_t last_size;
static __thread int marked;         /* the next allocation of this thread is measured */
/* A block handed out twice must reach glibc's free only once. */
#define MAXDUP 4096
static void *dup_[MAXDUP];
static int ndup;

static void init(void) {
  if (every) return;
  const char *e = getenv("BENCH_CORRUPT_EVERY");
  every = e && atol(e) > 0 ? (unsigned long)atol(e) : 1000;
  const char *m = getenv("BENCH_CORRUPT_MODE");
  overlap_mode = m && !strcmp(m, "overlap");
}

EXPORT void bench_shim_mark(void) { marked = 1; }

static void corrupt_pending(void *except) {
  if (pending && pending != except) {
    pending[0] ^= 0xff;
    pending = NULL;
  }
}

/* Called with every block handed out; p was just obtained from glibc. */
static void *handout(void *p, size_t n) {
  int m = marked;
  marked = 0;
  pthread_mutex_lock(&mu);
  init();
  corrupt_pending(p);
  if (m && p && n >= 1) {
    count++;
    if (count % every == 0) {
      if (!overlap_mode) {
        pending = p;
      } else if (last && n <= last_size && ndup < MAXDUP) {
        __libc_free(p);
        p = last;
        dup_[ndup++] = p;
      }
    }
    if (overlap_mode && p != last) {
      last = p;
      last_size = n;
    }
  }
  pthread_mutex_unlock(&mu);
  return p;
}

/* Returns 1 if glibc must not free p (a duplicate whose other owner still holds it). */
static int forget(void *p) {
  int dup = 0;
  pthread_mutex_lock(&mu);
  init();
  if (p == pending) pending = NULL;
  else corrupt_pending(p);
  for (int i = 0; i < ndup; i++)
    if (dup_[i] == p) { dup_[i] = dup_[--ndup]; dup = 1; break; }
  if (!dup && (unsigned char *)p == last) last = NULL;
  pthread_mutex_unlock(&mu);
  return dup;
}

EXPORT void *malloc(size_t n) { return handout(__libc_malloc(n), n); }
EXPORT void *calloc(size_t a, size_t b) { return handout(__libc_calloc(a, b), a * b); }
/* free(NULL) is a call of the allocator too: it may corrupt the pending block (the lone
 * workload has no other call while its one block is live). */
EXPORT void free(void *p) {
  if (!forget(p) && p) __libc_free(p);
}
EXPORT void *realloc(void *p, size_t n) {
  if (!p) return malloc(n);
  int m = marked;
  if (forget(p)) {
    /* The other owner keeps the memory: move to a fresh block. */
    void *q = __libc_malloc(n);
    size_t old = malloc_usable_size(p);
    if (q) memcpy(q, p, old < n ? old : n);
    marked = m;
    return handout(q, n);
  }
  marked = 0;
  void *q = __libc_realloc(p, n);
  marked = m && !overlap_mode;  /* never hand a realloc'd block out twice */
  return handout(q, n);
}
