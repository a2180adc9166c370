/* The symbols libmtheap-debug.so exports: the malloc family, glibc's internal names, every C++
 * operator new/delete, and mtheap_check_heap(); plus process start, fork, exit and dlclose.
 *
 * Invariants
 *   - the non-sampled path of a sample-only run (no headers) is: one TLS decrement, one load
 *     of mthd_opt.headers, a call to the core.  Everything else is out of line;
 *   - the first call of each thread takes the out-of-line path (its countdown starts at 0),
 *     which is where the process is initialized (mthd_init) and the countdown set;
 *   - options never change after initialization, so every block is freed with the layout it
 *     was allocated with; a sampled block is recognized by address before anything else;
 *   - operator new/delete record and check the allocator family of every headed block;
 *     they are written in C under their mangled names so the library needs no libstdc++.
 */
#include "mthd.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mtheap.h"
#include "alloc.h"   /* the core's inline fast paths: the unsampled path costs a call less */

MTHD_HIDDEN __thread mthd_tls_t mthd_tls __attribute__((tls_model("initial-exec")));
MTHD_HIDDEN _Atomic int mthd_ready;

#define CALLER ((uintptr_t)__builtin_return_address(0))
#define ZERO 1

uint32_t mthd_tid(void) {
  if (MTHD_UNLIKELY(mthd_tls.tid == 0)) mthd_tls.tid = (uint32_t)syscall(SYS_gettid);
  return mthd_tls.tid;
}

void mthd_init_slow(void) {
  int expect = 0;
  if (atomic_compare_exchange_strong(&mthd_ready, &expect, 1)) {
    /* nothing here may call malloc: we are inside the process's first allocation */
    mthd_options_init();
    mth_invalid_hook = mthd_core_invalid;
    if (mthd_opt.sample) mthd_sample_init();
    atomic_store_explicit(&mthd_ready, 2, memory_order_release);
    return;
  }
  while (atomic_load_explicit(&mthd_ready, memory_order_acquire) != 2) sched_yield();
}

/* ---- the shared allocation path ---- */

/* A thread's countdown reached zero: maybe sample this allocation. */
static __attribute__((noinline)) void *sample_slow(size_t size, size_t align, int family, bool zero, uintptr_t caller) {
  mthd_init();
  if (!mthd_opt.sample) {
    mthd_tls.sample_countdown = LONG_MAX;
    return NULL;
  }
  bool first = mthd_tls.rng == 0;
  mthd_tls.sample_countdown = mthd_sample_next();
  if ((first && mthd_opt.sample > 1) || mthd_tls.busy) return NULL;
  return mthd_sample_alloc(size, align, mthd_foreign_family(caller, family), zero, caller);
}

static __attribute__((noinline)) void *alloc_slow(size_t size, size_t align, int family, int flags, uintptr_t caller) {
  if (mthd_tls.sample_countdown <= 0) {
    void *p = sample_slow(size, align, family, flags & ZERO, caller);
    if (p) return p;
  }
  if (!mthd_opt.headers) {
    if (align > 16) return mtheap_memalign(align, size);
    return (flags & ZERO) ? mtheap_calloc(1, size) : mtheap_malloc(size);
  }
  return mthd_block_alloc(size, align, mthd_foreign_family(caller, family), flags, caller);
}

static inline void *alloc(size_t size, size_t align, int family, int flags, uintptr_t caller) {
  if (MTHD_LIKELY(--mthd_tls.sample_countdown > 0) && !mthd_opt.headers) {
    if (align > 16) return mtheap_memalign(align, size);
    return (flags & ZERO) ? mtheap_calloc(1, size) : mth_malloc_fast(size);
  }
  return alloc_slow(size, align, family, flags, caller);
}

/* Out of line so that free()'s common path saves no registers. */
static __attribute__((noinline)) void dealloc_slow(void *p, int family, size_t sized, size_t align, const char *fn,
                                                   uintptr_t caller) {
  family = mthd_foreign_family(caller, family);
  if (mthd_in_pool(p)) {
    mthd_sample_free(p, family, fn, caller);
    return;
  }
  if (p) {
    int saved = errno;  /* free() leaves errno alone (glibc >= 2.33 promises it) */
    mthd_block_free(p, family, sized, align, fn, caller);
    errno = saved;
  }
}

static inline void dealloc(void *p, int family, size_t sized, size_t align, const char *fn, uintptr_t caller) {
  if (MTHD_LIKELY(!mthd_in_pool(p) && !mthd_opt.headers)) {
    mth_free_fast(p);
    return;
  }
  dealloc_slow(p, family, sized, align, fn, caller);
}

/* ---- C ---- */

MTHD_EXPORT void *malloc(size_t size) { return alloc(size, 0, MTHD_FAM_MALLOC, 0, CALLER); }

MTHD_EXPORT void free(void *p) { dealloc(p, MTHD_FAM_MALLOC, (size_t)-1, 0, "free", CALLER); }

static void *calloc_impl(size_t n, size_t size, uintptr_t caller) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return alloc(total, 0, MTHD_FAM_MALLOC, ZERO, caller);
}

MTHD_EXPORT void *calloc(size_t n, size_t size) { return calloc_impl(n, size, CALLER); }

static void *realloc_impl(void *p, size_t size, uintptr_t caller) {
  if (MTHD_UNLIKELY(mthd_in_pool(p))) {
    size_t old = mthd_sample_size(p, caller);
    if (old == (size_t)-1) return NULL;
    if (size == 0) {
      mthd_sample_free(p, MTHD_FAM_MALLOC, "realloc", caller);
      return NULL;
    }
    void *q = alloc(size, 0, MTHD_FAM_MALLOC, 0, caller);
    if (!q) return NULL;
    memcpy(q, p, old < size ? old : size);
    mthd_sample_free(p, MTHD_FAM_MALLOC, "realloc", caller);
    return q;
  }
  if (p == NULL) return alloc(size, 0, MTHD_FAM_MALLOC, 0, caller);
  if (!mthd_opt.headers) return mtheap_realloc(p, size);
  if (size == 0) {  /* glibc: frees and returns NULL */
    mthd_block_free(p, MTHD_FAM_MALLOC, (size_t)-1, 0, "realloc", caller);
    return NULL;
  }
  return mthd_block_realloc(p, size, caller);
}

MTHD_EXPORT void *realloc(void *p, size_t size) { return realloc_impl(p, size, CALLER); }

MTHD_EXPORT void *reallocarray(void *p, size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return realloc_impl(p, total, CALLER);
}

MTHD_EXPORT void free_sized(void *p, size_t size) { dealloc(p, MTHD_FAM_MALLOC, size, 0, "free_sized", CALLER); }

MTHD_EXPORT void free_aligned_sized(void *p, size_t align, size_t size) {
  dealloc(p, MTHD_FAM_MALLOC, size, align, "free_aligned_sized", CALLER);
}

static bool pow2(size_t a) { return a && !(a & (a - 1)); }

MTHD_EXPORT int posix_memalign(void **out, size_t align, size_t size) {
  if (align < sizeof(void *) || !pow2(align)) return EINVAL;
  int saved = errno;
  void *p = alloc(size, align, MTHD_FAM_MALLOC, 0, CALLER);
  errno = saved;
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

MTHD_EXPORT void *aligned_alloc(size_t align, size_t size) {
  if (!pow2(align)) {
    errno = EINVAL;
    return NULL;
  }
  return alloc(size, align, MTHD_FAM_MALLOC, 0, CALLER);
}

static void *memalign_impl(size_t align, size_t size, uintptr_t caller) {
  if (!pow2(align)) {
    if (align > ((size_t)1 << 62)) {
      errno = EINVAL;
      return NULL;
    }
    align = align ? (size_t)1 << (64 - __builtin_clzl(align)) : 16;
  }
  return alloc(size, align, MTHD_FAM_MALLOC, 0, caller);
}

MTHD_EXPORT void *memalign(size_t align, size_t size) { return memalign_impl(align, size, CALLER); }

MTHD_EXPORT void *valloc(size_t size) { return alloc(size, (size_t)getpagesize(), MTHD_FAM_MALLOC, 0, CALLER); }

MTHD_EXPORT void *pvalloc(size_t size) {
  size_t ps = (size_t)getpagesize();
  if (size > ((size_t)1 << 46)) {
    errno = ENOMEM;
    return NULL;
  }
  size = size == 0 ? ps : (size + ps - 1) & ~(ps - 1);
  return alloc(size, ps, MTHD_FAM_MALLOC, 0, CALLER);
}

MTHD_EXPORT size_t malloc_usable_size(void *p) {
  if (p == NULL) return 0;
  if (mthd_in_pool(p)) {
    size_t n = mthd_sample_size(p, CALLER);
    return n == (size_t)-1 ? 0 : n;
  }
  if (!mthd_opt.headers) return mtheap_usable_size(p);
  return mthd_block_usable(p, CALLER);
}

/* glibc-internal names some programs and libraries call directly */
MTHD_EXPORT void *__libc_malloc(size_t size) { return alloc(size, 0, MTHD_FAM_MALLOC, 0, CALLER); }
MTHD_EXPORT void __libc_free(void *p) { dealloc(p, MTHD_FAM_MALLOC, (size_t)-1, 0, "free", CALLER); }
MTHD_EXPORT void *__libc_calloc(size_t n, size_t size) { return calloc_impl(n, size, CALLER); }
MTHD_EXPORT void *__libc_realloc(void *p, size_t size) { return realloc_impl(p, size, CALLER); }
MTHD_EXPORT void *__libc_memalign(size_t align, size_t size) { return memalign_impl(align, size, CALLER); }

/* dlclose may unmap code whose unwind rules are cached (unwind.c), and the next dlopen may
 * put other code at the same address: the cache starts over once the real dlclose is done. */
MTHD_EXPORT int dlclose(void *handle) {
  static int (*real_dlclose)(void *);
  if (!real_dlclose) real_dlclose = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
  if (!real_dlclose) {
    mthd_out_t o;
    mthd_out_init(&o);
    mthd_printf(&o, "==%d== mtheap-debug: dlclose: the C library's dlclose was not found\n", (int)getpid());
    mthd_flush(&o);
    return -1;
  }
  int rc = real_dlclose(handle);
  mthd_unwind_forget();
  mthd_foreign_forget();
  return rc;
}

MTHD_EXPORT int malloc_trim(size_t pad) {
  (void)pad;
  mtheap_collect(true);
  return 1;
}

MTHD_EXPORT int mallopt(int param, int value) {
  (void)param;
  (void)value;
  return 1;
}

MTHD_EXPORT struct mallinfo2 mallinfo2(void) {
  struct mtheap_stats st;
  mtheap_stats_get(&st);
  struct mallinfo2 mi;
  memset(&mi, 0, sizeof mi);
  mi.arena = st.committed;
  mi.ordblks = 1;
  mi.hblks = (size_t)st.huge_mallocs;
  mi.uordblks = st.in_use;
  mi.fordblks = st.committed > st.in_use ? st.committed - st.in_use : 0;
  mi.usmblks = st.in_use_peak;
  return mi;
}

MTHD_EXPORT struct mallinfo mallinfo(void) {
  struct mallinfo2 m2 = mallinfo2();
  struct mallinfo mi;
  memset(&mi, 0, sizeof mi);
  mi.arena = (int)m2.arena;
  mi.ordblks = (int)m2.ordblks;
  mi.hblks = (int)m2.hblks;
  mi.uordblks = (int)m2.uordblks;
  mi.fordblks = (int)m2.fordblks;
  mi.usmblks = (int)m2.usmblks;
  return mi;
}

MTHD_EXPORT void malloc_stats(void) { mtheap_stats_print(stderr); }

MTHD_EXPORT int mtheap_check_heap(void) {
  mthd_init();
  int errors = mthd_opt.sample ? (int)mthd_sample_check("mtheap_check_heap", CALLER) : 0;
  return errors + (mthd_opt.headers ? mthd_check_all("mtheap_check_heap", CALLER) : 0);
}

/* ---- C++ ---- */
typedef void (*new_handler_t)(void);
extern new_handler_t mthd_get_new_handler(void) __asm__("_ZSt15get_new_handlerv") __attribute__((weak));
extern void mthd_throw_bad_alloc(void) __asm__("_ZSt17__throw_bad_allocv") __attribute__((weak, noreturn));

/* operator new: retry through the new_handler, then throw (or return NULL for nothrow) */
static void *cxx_new(size_t size, size_t align, int family, bool nothrow, uintptr_t caller) {
  int flags = align ? MTHD_F_ALIGNED_NEW : 0;
  for (;;) {
    void *p = alloc(size, align, family, flags, caller);
    if (MTHD_LIKELY(p != NULL)) return p;
    new_handler_t h = mthd_get_new_handler ? mthd_get_new_handler() : NULL;
    if (h) {
      h();
      continue;
    }
    if (nothrow) return NULL;
    if (mthd_throw_bad_alloc) mthd_throw_bad_alloc();
    abort();
  }
}

#define CXX(ret, name, mangled, params) MTHD_EXPORT ret name params __asm__(mangled); MTHD_EXPORT ret name params
#define NEW MTHD_FAM_NEW
#define ARR MTHD_FAM_NEW_ARRAY
typedef const void *nothrow_ref;

CXX(void *, mthd_new, "_Znwm", (size_t n)) { return cxx_new(n, 0, NEW, false, CALLER); }
CXX(void *, mthd_new_arr, "_Znam", (size_t n)) { return cxx_new(n, 0, ARR, false, CALLER); }
CXX(void *, mthd_new_nt, "_ZnwmRKSt9nothrow_t", (size_t n, nothrow_ref t)) { return cxx_new(n, 0, NEW, true, CALLER); }
CXX(void *, mthd_new_arr_nt, "_ZnamRKSt9nothrow_t", (size_t n, nothrow_ref t)) { return cxx_new(n, 0, ARR, true, CALLER); }
CXX(void *, mthd_new_al, "_ZnwmSt11align_val_t", (size_t n, size_t al)) { return cxx_new(n, al, NEW, false, CALLER); }
CXX(void *, mthd_new_arr_al, "_ZnamSt11align_val_t", (size_t n, size_t al)) { return cxx_new(n, al, ARR, false, CALLER); }
CXX(void *, mthd_new_al_nt, "_ZnwmSt11align_val_tRKSt9nothrow_t", (size_t n, size_t al, nothrow_ref t)) {
  return cxx_new(n, al, NEW, true, CALLER);
}
CXX(void *, mthd_new_arr_al_nt, "_ZnamSt11align_val_tRKSt9nothrow_t", (size_t n, size_t al, nothrow_ref t)) {
  return cxx_new(n, al, ARR, true, CALLER);
}

#define NOSIZE ((size_t)-1)
CXX(void, mthd_del, "_ZdlPv", (void *p)) { dealloc(p, NEW, NOSIZE, 0, "operator delete", CALLER); }
CXX(void, mthd_del_arr, "_ZdaPv", (void *p)) { dealloc(p, ARR, NOSIZE, 0, "operator delete[]", CALLER); }
CXX(void, mthd_del_nt, "_ZdlPvRKSt9nothrow_t", (void *p, nothrow_ref t)) { dealloc(p, NEW, NOSIZE, 0, "operator delete", CALLER); }
CXX(void, mthd_del_arr_nt, "_ZdaPvRKSt9nothrow_t", (void *p, nothrow_ref t)) {
  dealloc(p, ARR, NOSIZE, 0, "operator delete[]", CALLER);
}
CXX(void, mthd_del_sz, "_ZdlPvm", (void *p, size_t n)) { dealloc(p, NEW, n, 0, "operator delete", CALLER); }
CXX(void, mthd_del_arr_sz, "_ZdaPvm", (void *p, size_t n)) { dealloc(p, ARR, n, 0, "operator delete[]", CALLER); }
CXX(void, mthd_del_al, "_ZdlPvSt11align_val_t", (void *p, size_t al)) { dealloc(p, NEW, NOSIZE, al, "operator delete", CALLER); }
CXX(void, mthd_del_arr_al, "_ZdaPvSt11align_val_t", (void *p, size_t al)) {
  dealloc(p, ARR, NOSIZE, al, "operator delete[]", CALLER);
}
CXX(void, mthd_del_al_nt, "_ZdlPvSt11align_val_tRKSt9nothrow_t", (void *p, size_t al, nothrow_ref t)) {
  dealloc(p, NEW, NOSIZE, al, "operator delete", CALLER);
}
CXX(void, mthd_del_arr_al_nt, "_ZdaPvSt11align_val_tRKSt9nothrow_t", (void *p, size_t al, nothrow_ref t)) {
  dealloc(p, ARR, NOSIZE, al, "operator delete[]", CALLER);
}
CXX(void, mthd_del_sz_al, "_ZdlPvmSt11align_val_t", (void *p, size_t n, size_t al)) {
  dealloc(p, NEW, n, al, "operator delete", CALLER);
}
CXX(void, mthd_del_arr_sz_al, "_ZdaPvmSt11align_val_t", (void *p, size_t n, size_t al)) {
  dealloc(p, ARR, n, al, "operator delete[]", CALLER);
}

/* ---- fork: no lock of ours may be held across it, or the child deadlocks on it ---- */

void mthd_fork_prepare(void) {
  for (int i = 0; i < MTHD_STRIPES; i++) mthd_lock(&mthd_stripes[i].lock);
  mthd_lock(&mthd_quarantine_lock);
  mthd_lock(&mthd_depot_lock);
  mthd_lock(&mthd_pool_lock);
}

void mthd_fork_parent(void) {
  mthd_unlock(&mthd_pool_lock);
  mthd_unlock(&mthd_depot_lock);
  mthd_unlock(&mthd_quarantine_lock);
  for (int i = MTHD_STRIPES - 1; i >= 0; i--) mthd_unlock(&mthd_stripes[i].lock);
}

void mthd_fork_child(void) {
  mthd_tls.tid = 0;
  mthd_fork_parent();
}

/* ---- process start and exit ---- */

__attribute__((constructor(101))) static void mthd_start(void) {
  mthd_init();
  if (mthd_opt.sample) mthd_sample_install_handler();
  pthread_atfork(mthd_fork_prepare, mthd_fork_parent, mthd_fork_child);
  if (mthd_opt.verbose) {
    mthd_out_t o;
    mthd_out_init(&o);
    mthd_printf(&o, "==%d== mtheap-debug: guards=%d patterns=%d quarantine=%zu audit=%d leaks=%d sample=%ld continue=%d\n",
                (int)getpid(), mthd_opt.guards, mthd_opt.patterns, mthd_opt.quarantine ? mthd_opt.quarantine_bytes : 0,
                mthd_opt.audit, mthd_opt.leaks, mthd_opt.sample, mthd_opt.cont);
    mthd_flush(&o);
  }
}

__attribute__((destructor(101))) static void mthd_exit(void) {
  if (atomic_load(&mthd_ready) != 2) return;
  int code = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  /* writes past live blocks and into freed blocks that never left the quarantine: found now,
   * before the leak report */
  if (mthd_opt.headers) mthd_check_all("exit", 0);
  /* and writes into the slack of sampled blocks never freed */
  if (mthd_opt.sample) mthd_sample_check("exit", 0);
  if (mthd_opt.headers && mthd_opt.leaks && mthd_leak_check() > 0) code = mthd_opt.leaks_exitcode;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (mthd_opt.verbose) {
    mthd_out_t o;
    mthd_out_init(&o);
    mthd_printf(&o, "==%d== mtheap-debug: leak check took %ld ms\n", (int)getpid(),
                (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000));
    long walks, declined;
    mthd_unwind_counts(&walks, &declined);
    mthd_printf(&o, "==%d== mtheap-debug: stacks: %ld walked by the cached unwind rules, %ld by libgcc's unwinder\n",
                (int)getpid(), walks > declined ? walks - declined : 0, declined);
    mthd_flush(&o);
  }
  if (!code && atomic_load(&mthd_errors) > 0) code = mthd_opt.error_exitcode;
  if (code) {
    fflush(NULL);
    _exit(code);
  }
}
