/* The fast paths of malloc and free, inlined into both the prefixed API (alloc.c) and the
 * overriding symbols (override.c).  Nothing here takes a lock or does an atomic read-modify-
 * write: a thread allocating and freeing its own small blocks touches only its own heap.
 *
 * malloc: size -> heap->direct[] (the first page of its class, up to 128 KiB, or the class's
 *   block cache from the time that page runs dry until the cache does: bcache.c) -> pop
 *   page->free.  Everything else (an empty list, a larger size, a thread without a heap) goes
 *   to mth_malloc_slow.  Every MTH_HEARTBEAT mallocs from a page, the malloc also runs
 *   the heap's tick (mth_malloc_heartbeat: remote frees taken in, memory purged), so a thread
 *   that never leaves the fast path still does that work.
 * free:   pointer -> segmap byte (is it ours?) -> the descriptor of the block's slice -> if
 *   its owner tag is our heap, push on the list the slice names (slice->list): the page's own
 *   (a page with room, which needs no care), or for a full page of a class with a block cache
 *   the cache's (bcache.c), which is a page descriptor too.  LIFO, so the next malloc of the
 *   class reuses the block still in cache.  A block already at the head of the list is a
 *   double free (mth_free_twice).  No branch on which list: freed at random, half the blocks
 *   of a class may be in full pages and half not, which no predictor learns.
 *   When used reaches 0: a page left empty stays as it is when it is the only page of a small
 *   class (its queue links are both NULL: the per-class cache of one page) or listed as
 *   retired already, anything else is retired (page.c); a cache's used reaches 0 at its trip
 *   count (its cap, its tick), and its next names itself so that the same test calls out.
 */
#ifndef MTH_ALLOC_H
#define MTH_ALLOC_H
#include "internal.h"

MTH_INLINE void *mth_malloc_fast(size_t size) {
  mth_heap_t *heap = mth_tls_heap;
  mth_page_t *page;
  if (MTH_LIKELY(size <= MTH_SMALL_MAX)) page = heap->direct[(size + 15) >> 4];
  else if (size <= MTH_CLASS_MAX) page = heap->direct[mth_direct_index(size)];
  else return mth_malloc_slow(size);
  /* a class without a page (and every class of a thread without a heap) has mth_page_empty,
   * whose list is empty: the slow path */
  mth_block_t *b = page->free;
  if (MTH_LIKELY(b != NULL)) {
    page->free = b->next;
    MTH_RACY_ADD(page->used, 1);
    int32_t credit = page->credit - 1;
    MTH_RACY_SET(page->credit, credit);
    if (MTH_UNLIKELY(credit == 0)) return mth_malloc_heartbeat(page, b);
    return b;
  }
  return mth_malloc_slow(size);
}

MTH_INLINE void mth_free_fast(void *p) {
  uintptr_t a = (uintptr_t)p;
  if (MTH_LIKELY(mth_segmap_test_fast(a))) {
    mth_page_t *slice = mth_slice_of_fast(mth_segment_of(p), a);
    mth_heap_t *heap = mth_tls_heap;
    if (MTH_LIKELY(MTH_RACY_GET(slice->owner) == heap)) {
      mth_page_t *list = slice->list;   /* the page, or its class's block cache */
      mth_block_t *b = (mth_block_t *)p;
      /* a block that heads the list is free already: the usual double free (free(p);
       * free(p)), caught for one compare with the field the push reads anyway; pushing it
       * again would hand the block out twice.  The slow paths check more. */
      if (MTH_UNLIKELY(b == list->free)) {
        mth_free_twice(p);
        return;
      }
      b->next = list->free;
      list->free = b;
      MTH_RACY_ADD(list->used, -1);
      /* a page that emptied, or a cache at its trip count (whose next links itself) */
      if (MTH_UNLIKELY(list->used == 0) && !list->retired &&
          (list->next != NULL || list->prev != NULL || list->block_size > MTH_RETAIN_MAX))
        mth_free_emptied(heap, list);
      return;
    }
    mth_free_page_slow(p, mth_page_of_fast(mth_segment_of(p), a));
    return;
  }
  mth_free_slow(p);
}

MTH_HIDDEN void *mth_calloc(size_t n, size_t size);
MTH_HIDDEN void *mth_realloc(void *p, size_t size);
MTH_HIDDEN void *mth_malloc_aligned(size_t size, size_t align);
MTH_HIDDEN size_t mth_usable_size(const void *p, const char *caller);
#endif
