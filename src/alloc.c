/* The malloc family behind the prefixed API: slow paths, calloc/realloc/aligned allocation,
 * and the checks that turn a bad pointer into a clear error instead of corruption. */
#include "alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

static mth_heap_t *mth_heap(void) {
  mth_heap_t *heap = mth_tls_heap;
  if (MTH_UNLIKELY(heap == &mth_heap_empty)) heap = mth_heap_get_slow();
  return heap;
}

void *mth_malloc_slow(size_t size) {
  mth_heap_t *heap = mth_heap();
  void *p = NULL;
  if (MTH_LIKELY(heap != NULL && size <= MTH_MAX_ALLOC)) {
    mth_heap_enter(heap);
    p = mth_page_alloc_slow(heap, size);
    mth_heap_leave(heap);
  }
  if (MTH_UNLIKELY(p == NULL)) errno = ENOMEM;
  return p;
}

/* Counted in the freeing thread's heap; a thread that only frees gets one just for its counters. */
static void mth_count_remote_free(mth_heap_t *heap, mth_inbox_result_t where) {
  if (MTH_UNLIKELY(heap == &mth_heap_empty)) heap = mth_heap_get_slow();
  if (!heap) return;
  MTH_RACY_ADD(heap->st_remote_out, 1);
  if (where == MTH_INBOX_OVERFLOW) MTH_RACY_ADD(heap->st_inbox_overflow, 1);
  else if (where == MTH_INBOX_FREED_FOR) MTH_RACY_ADD(heap->st_proxy_frees, 1);
}

/* Set by libmtheap-debug.so: its report names the pointer's mapping and the caller's stack.
 * When it returns (its 'continue' option), the call is ignored as below. */
void (*mth_invalid_hook)(const char *what, const void *p, const char *why);

void mth_invalid_pointer(const char *what, const void *p, const char *why) {
  if (mth_invalid_hook) {
    mth_invalid_hook(what, p, why);
    return;
  }
  if (mth_opt.abort_on_invalid)
    mth_fatal("%s(%p): %s (set MTHEAP_ABORT_ON_INVALID=0 to ignore such calls)", what, p, why);
  mth_message("warning: %s(%p): %s; ignored", what, p, why);
}

/* The free paths of the owner found p free already (alloc.h).  Reported like any invalid
 * pointer; when that returns (MTHEAP_ABORT_ON_INVALID=0, or the debug library's 'continue'),
 * the call is ignored and the free list stays intact. */
MTH_HIDDEN const char mth_why_double_free[] = "double free: the block is free already";

MTH_NOINLINE __attribute__((cold)) void mth_free_twice(const void *p) {
  mth_invalid_pointer("free", p, mth_why_double_free);
}

/* The block p belongs to, after the checks the fast path skips.  NULL if p is invalid (the
 * error has been reported).  *hseg is set for huge blocks. */
static mth_block_t *mth_block_of(const void *p, const char *what, mth_page_t **pagep,
                                 mth_segment_t **hseg) {
  mth_segment_t *seg = mth_segment_of(p);
  *hseg = NULL;
  if (!mth_segmap_test(seg) || !mth_segment_valid(seg) || seg->kind == MTH_SEG_HUGE) {
    mth_segment_t *h = mth_huge_lookup(p);
    if (!h) {
      mth_invalid_pointer(what, p, mth_arena_contains(p) ? "not an allocated block (freed twice, or never allocated)"
                                                         : "pointer not allocated by mtheap");
      return NULL;
    }
    if (p != h->huge_block) {
      mth_invalid_pointer(what, p, "pointer into the middle of a block");
      return NULL;
    }
    *hseg = h;
    return (mth_block_t *)p;
  }
  mth_page_t *page = mth_page_of(seg, p);
  uint32_t flags = mth_page_flags(page);
  if (mth_page_unused(page, flags)) {
    mth_invalid_pointer(what, p, "not an allocated block (freed twice, or never allocated)");
    return NULL;
  }
  size_t off = mth_block_offset(page, p);
  if ((off != 0 && !(flags & MTH_PAGE_ALIGNED)) || off >= page->block_size) {
    mth_invalid_pointer(what, p, "pointer into the middle of a block");
    return NULL;
  }
  *pagep = page;
  return (mth_block_t *)((const uint8_t *)p - off);
}

/* A block of some span page the fast path did not take: a full page of ours (the owner's
 * comparison fails on full pages), or a page of another heap.  Ordinary pages need none of
 * mth_block_of's lookups: the segment is live (its map bit is set) and the page names its heap
 * (page->home: the segment's, or the heap that borrowed the span, segment.c).  A remote free
 * still checks that p starts a block, as it always did; anything else
 * (aligned blocks, free slices, a header, a huge segment) takes the checked path. */
void mth_free_page_slow(void *p, mth_page_t *page) {
  uint32_t flags = mth_page_flags(page);
  mth_segment_t *seg = mth_segment_of(p);
  /* a never-used slice's descriptor is all zeros (flags 0): its block_size of 0 sends it to
   * the checked path like a free slice's MTH_PAGE_UNUSED (mth_page_unused) */
  if (MTH_LIKELY((flags & ~(uint32_t)MTH_PAGE_FULL) == 0 && seg->kind == MTH_SEG_SPANS &&
                 MTH_RACY_GET(page->block_size) != 0)) {
    mth_heap_t *owner = MTH_RACY_GET(page->home), *heap = mth_tls_heap;
    if (owner == heap) {
      mth_heap_enter(heap);
      mth_page_free_local(heap, page, (mth_block_t *)p);
      /* a thread whose big blocks cycle through its block caches (bcache.c) may take no
       * malloc slow path for long: the tick (purging, scavenging, remote frees) also runs
       * on every 16th of these frees */
      if ((++heap->slow_frees & 15) == 0) mth_heap_tick(heap);
      mth_heap_leave(heap);
      return;
    }
    if (mth_block_offset(page, p) == 0) {
      mth_count_remote_free(heap, mth_inbox_push(owner, (mth_block_t *)p));
      return;
    }
  }
  mth_free_slow(p);
}

void mth_free_slow(void *p) {
  if (p == NULL) return;
  mth_page_t *page;
  mth_segment_t *hseg;
  mth_block_t *b = mth_block_of(p, "free", &page, &hseg);
  if (!b) return;
  if (hseg) {
    mth_huge_free(hseg);
    return;
  }
  mth_heap_t *heap = mth_tls_heap, *home = MTH_RACY_GET(page->home);
  if (home == heap) {
    mth_heap_enter(heap);
    mth_page_free_local(heap, page, b);
    mth_heap_leave(heap);
    return;
  }
  /* another thread's block: into its heap's inbox (one atomic); the owner reclaims it lazily */
  mth_count_remote_free(heap, mth_inbox_push(home, b));
}

size_t mth_usable_size(const void *p, const char *caller) {
  if (p == NULL) return 0;
  mth_page_t *page;
  mth_segment_t *hseg;
  mth_block_t *b = mth_block_of(p, caller, &page, &hseg);
  if (!b) return 0;
  if (hseg) return (size_t)(hseg->huge_block + hseg->huge_size - (const uint8_t *)p);
  return page->block_size - (size_t)((const uint8_t *)p - (const uint8_t *)b);
}

void *mth_calloc(size_t n, size_t size) {
  size_t total;
  if (MTH_UNLIKELY(__builtin_mul_overflow(n, size, &total) || total > MTH_MAX_ALLOC)) {
    errno = ENOMEM;
    return NULL;
  }
  if (total <= MTH_SMALL_MAX) {
    void *p = mth_malloc_fast(total);
    if (p) memset(p, 0, total);
    return p;
  }
  mth_heap_t *heap = mth_heap();
  void *p = NULL;
  if (heap) {
    mth_heap_enter(heap);
    p = mth_page_alloc_zero(heap, total);
    mth_heap_leave(heap);
  }
  if (!p) errno = ENOMEM;
  return p;
}

void *mth_realloc(void *p, size_t size) {
  if (p == NULL) return mth_malloc_fast(size);
  if (size == 0) {   /* glibc: frees and returns NULL */
    mth_free_fast(p);
    return NULL;
  }
  if (size > MTH_MAX_ALLOC) {
    errno = ENOMEM;
    return NULL;
  }
  mth_page_t *page;
  mth_segment_t *hseg;
  mth_block_t *b = mth_block_of(p, "realloc", &page, &hseg);
  if (!b) return NULL;
  size_t usable;
  if (hseg) {
    usable = (size_t)(hseg->huge_block + hseg->huge_size - (uint8_t *)p);
    if (size > MTH_LARGE_MAX) {
      void *q = mth_huge_realloc(hseg, p, size);
      if (q) return q;
    }
  } else {
    usable = page->block_size - (size_t)((uint8_t *)p - (uint8_t *)b);
    mth_heap_t *heap = mth_tls_heap;
    /* A large block of this thread grows over free slices behind it or gives back its tail:
     * growth chains (vectors, string builders) then copy nothing. */
    if (page->bin == MTH_BIN_LARGE && (void *)b == p && size > MTH_CLASS_MAX &&
        size <= MTH_LARGE_MAX && MTH_RACY_GET(page->owner) == heap) {
      mth_heap_enter(heap);
      bool done = mth_span_resize(heap, page, size);
      mth_heap_leave(heap);
      if (done) {
        MTH_RACY_ADD(heap->st_realloc_inplace, 1);
        return p;
      }
    }
    if (size <= usable && size >= usable / 2) return p;
  }
  void *q;
  if (size > usable && size > MTH_CLASS_MAX && size <= MTH_LARGE_MAX) {
    mth_heap_t *heap = mth_heap();
    q = NULL;
    if (heap) {
      mth_heap_enter(heap);
      q = mth_page_alloc_growing(heap, size);
      mth_heap_leave(heap);
    }
    if (!q) errno = ENOMEM;
  } else if (size > usable && size <= MTH_CLASS_MAX && size - usable < usable / 4) {
    /* A block growing by less than a quarter (a string appended to, a list over-allocating
     * by an eighth) is a growth chain: its next class is an eighth bigger, so nearly every
     * step copied it.  A quarter more than asked lets the next steps fit in place: appended
     * 64 bytes at a time from 1 to 64 KiB it moved 48 times, 15 with this (test_api), and to
     * 256 KiB cost 2.39 M instructions, 1.09 M with this (tcmalloc 1.36 M, glibc 0.58 M,
     * growing at the top of its heap).  A block that grows by a third (bench realloc) or
     * doubles gets what it asks for: the quarter would not hold its next step. */
    size_t want = size + size / 4;
    q = mth_malloc_fast(want <= MTH_CLASS_MAX ? want : MTH_CLASS_MAX);
  } else {
    q = mth_malloc_fast(size);
  }
  if (!q) return NULL;
  memcpy(q, p, size < usable ? size : usable);
  mth_free_fast(p);
  return q;
}

void *mth_malloc_aligned(size_t size, size_t align) {
  if (align <= 16) return mth_malloc_fast(size);
  if (size == 0) size = 1;
  if (size > MTH_MAX_ALLOC || align > MTH_REGION_SIZE) {
    errno = ENOMEM;
    return NULL;
  }
  /* classes that are a multiple of the alignment are aligned already: page starts are */
  if (size <= MTH_CLASS_MAX && align <= MTH_SLICE_SIZE && (mth_bin_size(mth_bin_of(size)) & (align - 1)) == 0)
    return mth_malloc_fast(size);
  size_t over = size + align - 1;
  if (over <= MTH_LARGE_MAX) {
    if (size > MTH_CLASS_MAX && align <= MTH_SLICE_SIZE) return mth_malloc_fast(size);  /* large spans start on a slice */
    uint8_t *p = mth_malloc_fast(over);
    if (!p) return NULL;
    uint8_t *q = (uint8_t *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
    if (q != p) {
      mth_segment_t *seg = mth_segment_of(p);
      mth_page_t *page = mth_page_of(seg, p);   /* our own page: malloc just used it */
      mth_heap_t *heap = mth_tls_heap;
      mth_heap_enter(heap);
      mth_page_set_flags(page, page->flags | MTH_PAGE_ALIGNED, NULL);
      mth_heap_leave(heap);
    }
    return q;
  }
  mth_heap_t *heap = mth_heap();
  void *p = NULL;
  if (heap) {
    mth_heap_enter(heap);
    p = mth_huge_alloc(heap, size, align, false);
    mth_heap_leave(heap);
  }
  if (!p) errno = ENOMEM;
  return p;
}

/* ---- the prefixed API ---- */

MTHEAP_API void *mtheap_malloc(size_t size) { return mth_malloc_fast(size); }
MTHEAP_API void mtheap_free(void *p) { mth_free_fast(p); }
MTHEAP_API void *mtheap_calloc(size_t n, size_t size) { return mth_calloc(n, size); }
MTHEAP_API void *mtheap_realloc(void *p, size_t size) { return mth_realloc(p, size); }

MTHEAP_API void *mtheap_reallocarray(void *p, size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return mth_realloc(p, total);
}

MTHEAP_API void mtheap_free_sized(void *p, size_t size) { mth_free_fast(p); }
MTHEAP_API void mtheap_free_aligned_sized(void *p, size_t align, size_t size) { mth_free_fast(p); }

MTHEAP_API int mtheap_posix_memalign(void **out, size_t align, size_t size) {
  if (align < sizeof(void *) || (align & (align - 1)) != 0) return EINVAL;
  int saved = errno;
  void *p = mth_malloc_aligned(size, align);
  errno = saved;
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

MTHEAP_API void *mtheap_aligned_alloc(size_t align, size_t size) {
  if (align == 0 || (align & (align - 1)) != 0) {
    errno = EINVAL;
    return NULL;
  }
  return mth_malloc_aligned(size, align);
}

/* glibc's memalign rounds an alignment that is not a power of two up to one. */
MTHEAP_API void *mtheap_memalign(size_t align, size_t size) {
  if (align & (align - 1)) {
    if (align > ((size_t)1 << 62)) {
      errno = EINVAL;
      return NULL;
    }
    align = (size_t)1 << (64 - __builtin_clzl(align));
  }
  return mth_malloc_aligned(size, align);
}

MTHEAP_API void *mtheap_valloc(size_t size) { return mth_malloc_aligned(size, (size_t)getpagesize()); }

MTHEAP_API void *mtheap_pvalloc(size_t size) {
  size_t ps = (size_t)getpagesize();
  if (size > MTH_MAX_ALLOC) {
    errno = ENOMEM;
    return NULL;
  }
  size = size == 0 ? ps : (size + ps - 1) & ~(ps - 1);
  return mth_malloc_aligned(size, ps);
}

MTHEAP_API size_t mtheap_usable_size(const void *p) { return mth_usable_size(p, "malloc_usable_size"); }

MTHEAP_API bool mtheap_owns(const void *p) {
  if (p == NULL) return false;
  mth_segment_t *seg = mth_segment_of(p);
  if (mth_segmap_test(seg) && mth_segment_valid(seg)) {
    if (seg->kind == MTH_SEG_HUGE) return (const uint8_t *)p >= seg->huge_block;
    mth_page_t *page = mth_page_of(seg, p);
    return !mth_page_unused(page, mth_page_flags(page));
  }
  return mth_huge_lookup(p) != NULL;
}
