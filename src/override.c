/* The symbols that replace glibc's malloc (LD_PRELOAD=libmtheap.so, or -lmtheap) and C++'s
 * operator new/delete.  The fast paths are inlined here, so malloc itself is the fast path,
 * not a jump to it.
 *
 * operator new lives in C with its mangled names so libmtheap does not depend on libstdc++.
 * Throwing std::bad_alloc needs libstdc++, which every C++ program has loaded: we reach it
 * through weak references that the dynamic linker resolves when it is there. */
#include "alloc.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#define MTH_EXPORT __attribute__((visibility("default")))

MTH_EXPORT void *malloc(size_t size) { return mth_malloc_fast(size); }
MTH_EXPORT void free(void *p) { mth_free_fast(p); }
MTH_EXPORT void *calloc(size_t n, size_t size) { return mth_calloc(n, size); }
MTH_EXPORT void *realloc(void *p, size_t size) { return mth_realloc(p, size); }
MTH_EXPORT void *reallocarray(void *p, size_t n, size_t size) { return mtheap_reallocarray(p, n, size); }
MTH_EXPORT void free_sized(void *p, size_t size) { mth_free_fast(p); }
MTH_EXPORT void free_aligned_sized(void *p, size_t align, size_t size) { mth_free_fast(p); }
MTH_EXPORT int posix_memalign(void **out, size_t align, size_t size) { return mtheap_posix_memalign(out, align, size); }
MTH_EXPORT void *aligned_alloc(size_t align, size_t size) { return mtheap_aligned_alloc(align, size); }
MTH_EXPORT void *memalign(size_t align, size_t size) { return mtheap_memalign(align, size); }
MTH_EXPORT void *valloc(size_t size) { return mtheap_valloc(size); }
MTH_EXPORT void *pvalloc(size_t size) { return mtheap_pvalloc(size); }
MTH_EXPORT size_t malloc_usable_size(void *p) { return mth_usable_size(p, "malloc_usable_size"); }

/* glibc-internal names some programs and libraries call directly */
MTH_EXPORT void *__libc_malloc(size_t size) { return mth_malloc_fast(size); }
MTH_EXPORT void __libc_free(void *p) { mth_free_fast(p); }
MTH_EXPORT void *__libc_calloc(size_t n, size_t size) { return mth_calloc(n, size); }
MTH_EXPORT void *__libc_realloc(void *p, size_t size) { return mth_realloc(p, size); }
MTH_EXPORT void *__libc_memalign(size_t align, size_t size) { return mtheap_memalign(align, size); }

MTH_EXPORT int malloc_trim(size_t pad) {
  mtheap_collect(true);
  return 1;
}

/* Accepted and ignored: glibc's tunables (arenas, mmap threshold, ...) have no meaning here. */
MTH_EXPORT int mallopt(int param, int value) { return 1; }

MTH_EXPORT struct mallinfo2 mallinfo2(void) {
  struct mtheap_stats st;
  mtheap_stats_get(&st);
  struct mallinfo2 mi = {0};
  mi.arena = st.committed;
  mi.ordblks = 1;
  mi.hblks = (size_t)st.huge_mallocs;
  mi.uordblks = st.in_use;
  mi.fordblks = st.committed > st.in_use ? st.committed - st.in_use : 0;
  mi.usmblks = st.in_use_peak;
  return mi;
}

MTH_EXPORT struct mallinfo mallinfo(void) {
  struct mallinfo2 m2 = mallinfo2();
  struct mallinfo mi = {0};
  mi.arena = (int)m2.arena;
  mi.ordblks = (int)m2.ordblks;
  mi.hblks = (int)m2.hblks;
  mi.uordblks = (int)m2.uordblks;
  mi.fordblks = (int)m2.fordblks;
  mi.usmblks = (int)m2.usmblks;
  return mi;
}

MTH_EXPORT void malloc_stats(void) { mtheap_stats_print(stderr); }

/* ---- C++ ---- */
typedef void (*mth_new_handler)(void);
extern mth_new_handler mth_cxx_get_new_handler(void) __asm__("_ZSt15get_new_handlerv") __attribute__((weak));
extern void mth_cxx_throw_bad_alloc(void) __asm__("_ZSt17__throw_bad_allocv") __attribute__((weak, noreturn));

/* operator new: retry through the new_handler, then throw (or return NULL for nothrow) */
static void *mth_cxx_new_slow(size_t size, size_t align, bool nothrow) {
  for (;;) {
    void *p = align ? mth_malloc_aligned(size, align) : mth_malloc_fast(size);
    if (p) return p;
    mth_new_handler h = mth_cxx_get_new_handler ? mth_cxx_get_new_handler() : NULL;
    if (h) {
      h();
      continue;
    }
    if (nothrow) return NULL;
    if (mth_cxx_throw_bad_alloc) mth_cxx_throw_bad_alloc();
    mth_fatal("operator new(%zu): out of memory and no C++ runtime to throw std::bad_alloc", size);
  }
}

MTH_INLINE void *mth_cxx_new(size_t size) {
  void *p = mth_malloc_fast(size);
  return MTH_LIKELY(p != NULL) ? p : mth_cxx_new_slow(size, 0, false);
}
MTH_INLINE void *mth_cxx_new_aligned(size_t size, size_t align, bool nothrow) {
  void *p = mth_malloc_aligned(size, align);
  return MTH_LIKELY(p != NULL) ? p : mth_cxx_new_slow(size, align, nothrow);
}

#define MTH_CXX(ret, name, mangled, params) MTH_EXPORT ret name params __asm__(mangled); MTH_EXPORT ret name params

typedef const void *mth_nothrow_ref;
MTH_CXX(void *, mth_new, "_Znwm", (size_t n)) { return mth_cxx_new(n); }
MTH_CXX(void *, mth_new_arr, "_Znam", (size_t n)) { return mth_cxx_new(n); }
MTH_CXX(void *, mth_new_nt, "_ZnwmRKSt9nothrow_t", (size_t n, mth_nothrow_ref t)) {
  void *p = mth_malloc_fast(n);
  return p ? p : mth_cxx_new_slow(n, 0, true);
}
MTH_CXX(void *, mth_new_arr_nt, "_ZnamRKSt9nothrow_t", (size_t n, mth_nothrow_ref t)) {
  void *p = mth_malloc_fast(n);
  return p ? p : mth_cxx_new_slow(n, 0, true);
}
MTH_CXX(void *, mth_new_al, "_ZnwmSt11align_val_t", (size_t n, size_t al)) { return mth_cxx_new_aligned(n, al, false); }
MTH_CXX(void *, mth_new_arr_al, "_ZnamSt11align_val_t", (size_t n, size_t al)) { return mth_cxx_new_aligned(n, al, false); }
MTH_CXX(void *, mth_new_al_nt, "_ZnwmSt11align_val_tRKSt9nothrow_t", (size_t n, size_t al, mth_nothrow_ref t)) {
  return mth_cxx_new_aligned(n, al, true);
}
MTH_CXX(void *, mth_new_arr_al_nt, "_ZnamSt11align_val_tRKSt9nothrow_t", (size_t n, size_t al, mth_nothrow_ref t)) {
  return mth_cxx_new_aligned(n, al, true);
}
MTH_CXX(void, mth_del, "_ZdlPv", (void *p)) { mth_free_fast(p); }
MTH_CXX(void, mth_del_arr, "_ZdaPv", (void *p)) { mth_free_fast(p); }
MTH_CXX(void, mth_del_nt, "_ZdlPvRKSt9nothrow_t", (void *p, mth_nothrow_ref t)) { mth_free_fast(p); }
MTH_CXX(void, mth_del_arr_nt, "_ZdaPvRKSt9nothrow_t", (void *p, mth_nothrow_ref t)) { mth_free_fast(p); }
MTH_CXX(void, mth_del_sz, "_ZdlPvm", (void *p, size_t n)) { mth_free_fast(p); }
MTH_CXX(void, mth_del_arr_sz, "_ZdaPvm", (void *p, size_t n)) { mth_free_fast(p); }
MTH_CXX(void, mth_del_al, "_ZdlPvSt11align_val_t", (void *p, size_t al)) { mth_free_fast(p); }
MTH_CXX(void, mth_del_arr_al, "_ZdaPvSt11align_val_t", (void *p, size_t al)) { mth_free_fast(p); }
MTH_CXX(void, mth_del_al_nt, "_ZdlPvSt11align_val_tRKSt9nothrow_t", (void *p, size_t al, mth_nothrow_ref t)) { mth_free_fast(p); }
MTH_CXX(void, mth_del_arr_al_nt, "_ZdaPvSt11align_val_tRKSt9nothrow_t", (void *p, size_t al, mth_nothrow_ref t)) { mth_free_fast(p); }
MTH_CXX(void, mth_del_sz_al, "_ZdlPvmSt11align_val_t", (void *p, size_t n, size_t al)) { mth_free_fast(p); }
MTH_CXX(void, mth_del_arr_sz_al, "_ZdaPvmSt11align_val_t", (void *p, size_t n, size_t al)) { mth_free_fast(p); }
