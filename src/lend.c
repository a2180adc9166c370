/* Lending: a heap's span on another heap's free resident slices.
 *
 * Why: every heap reused only its own free slices, so a program whose threads' needs rise and
 * fall out of step held each thread's high-water mark at once: a heap took a fresh segment for
 * a large block while other heaps' resident free slices sat idle (`mstress`, whose threads
 * come and go with an occasional block of up to 512 KiB), or for pages while another heap's
 * remote frees had just emptied some (`xfree -t 8`).  A heap that would touch fresh memory
 * (segment.c, mth_span_alloc) looks for a window of resident free slices in another heap's
 * segments first: peak RSS of `mstress -t 8` 33.4 -> 25.4 MiB, of `xfree -t 8` 229.5 -> 195.1
 * MiB, the time the same (docs/PERFORMANCE.md).
 *
 * Invariants:
 *   - the slices stay the lending heap's: its segment's masks, lists and purge schedule change
 *     only under its lock, which another thread only ever tries to take, once (never waits:
 *     two heaps lending to each other cannot deadlock); the heaps are walked under the heap
 *     list's lock, also only tried.
 *   - the span is the borrower's (page->home): its blocks, frees and remote frees are the
 *     borrower's business as for any page of its own.  It grows or shrinks in place only under
 *     the lender's lock (segment.c, mth_span_resize), and emptied, its slices go back to the
 *     lender (mth_span_give_back).
 *   - a span on its lender's spans_back has its slices still marked used and its descriptor
 *     MTH_PAGE_UNUSED (a free into it is reported); only the lender releases them.
 */
#include "internal.h"

/* A span of n slices on another heap's free slices, or NULL.  Only a window wholly resident is
 * taken, or, when the alternative is a new segment (need), one partly resident: fresh slices
 * are no better in another heap's segment than in one's own.  The caller does not ask for a
 * growing block (realloc's room behind it), whose growth in place would need the lender's lock
 * at every step.  A failed walk reads every heap's idle count, so a heap that found nothing
 * waits MTH_BORROW_BACKOFF span allocations before it looks again, unless a segment is at stake. */
#define MTH_BORROW_TRIES 8         /* heaps whose lock one search tries */
#define MTH_BORROW_BACKOFF 32
mth_page_t *mth_span_borrow(mth_heap_t *heap, size_t n, bool need) {
  uint64_t all = atomic_load_explicit(&mth_gstats.idle_slices, memory_order_relaxed);
  if (all < (uint64_t)heap->idle_slices + n) return NULL;
  if (heap->borrow_skip && !need) {
    heap->borrow_skip--;
    return NULL;
  }
  if (!mth_heaps_trylock()) {
    MTH_RACY_ADD(heap->st_lend_rmw, 1);   /* the failed try */
    return NULL;
  }
  MTH_RACY_ADD(heap->st_lend_rmw, 2);   /* the list's lock, taken and let go */
  mth_page_t *page = NULL;
  int tries = 0;
  for (mth_heap_t *h = mth_heaps_first(); h && tries < MTH_BORROW_TRIES; h = h->all_next) {
    if (h == heap || MTH_RACY_GET(h->idle_slices) < n) continue;
    int st = atomic_load_explicit(&h->state, memory_order_relaxed);
    if (st != MTH_HEAP_LIVE && st != MTH_HEAP_ABANDONED) continue;   /* not a fork's zombie */
    tries++;
    MTH_RACY_ADD(heap->st_lend_rmw, 1);
    if (!mth_heap_try_enter_for(h)) continue;
    size_t room = 0;
    mth_fit_t best = mth_fit_heap(h, n, &room);
    /* all of it resident (some, when the alternative is a new segment) */
    if (best.seg && (best.dirty == (int)n || (need && best.dirty > 0))) {
      mth_slices_claim(h, best.seg, (size_t)best.idx, (size_t)best.idx, n, NULL);
      page = &best.seg->pages[best.idx];
      MTH_RACY_SET(page->slice_offset, 0);
      page->slice_count = (uint8_t)n;
      MTH_RACY_SET(page->flags, 0);
      MTH_RACY_SET(page->owner, NULL);   /* set by mth_page_init, with home */
    }
    mth_heap_leave_for(h);
    if (page) break;
  }
  mth_heaps_unlock();
  if (page) MTH_RACY_ADD(heap->st_borrows, 1);
  else if (!need) heap->borrow_skip = MTH_BORROW_BACKOFF;
  return page;
}

/* Entering a lender's lock for its segment, from a thread that holds its own heap's: never
 * waits (two heaps each giving back to the other must not deadlock).  HELD: this thread is the
 * lender's own and inside its lock already (freeing for an absent owner, inbox.c). */
mth_lender_t mth_lender_enter(mth_heap_t *owner) {
  if (mth_tls_heap == owner && owner->lock_depth > 0) return MTH_LENDER_HELD;
  return mth_heap_try_enter_for(owner) ? MTH_LENDER_TAKEN : MTH_LENDER_BUSY;
}

/* A span heap took from another heap's segment (mth_span_borrow), emptied: its slices go back
 * to that heap, under its lock, which another thread only ever tries to take.  When it is
 * busy the span waits on the heap's spans_back for the heap's next tick (or, for an owner
 * that is away, another thread's: heap.c), marked as a free slice meanwhile, so a stray free
 * into it is reported, not taken.  The heap's own thread, inside its lock already (freeing for
 * an absent owner, inbox.c), gives it back at once. */
void mth_span_give_back(mth_page_t *page) {
  mth_segment_t *seg = mth_segment_of(page);
  mth_heap_t *owner = seg->heap;
  size_t idx = mth_page_index(page), n = page->slice_count;
  mth_heap_t *home = page->home;
  MTH_RACY_ADD(home->st_lend_rmw, 1);   /* the try, or the push below */
  mth_lender_t how = mth_lender_enter(owner);
  if (how != MTH_LENDER_BUSY) {
    mth_slices_release(owner, seg, idx, n);
    if (how == MTH_LENDER_TAKEN) mth_heap_leave_for(owner);
    return;
  }
  MTH_RACY_ADD(home->st_lent_late, 1);
  mth_page_set_flags(page, MTH_PAGE_UNUSED, NULL);
  mth_page_t *head = atomic_load_explicit(&owner->spans_back, memory_order_relaxed);
  do page->next = head;
  while (!atomic_compare_exchange_weak_explicit(&owner->spans_back, &head, page, memory_order_release,
                                                memory_order_relaxed));
}

/* The owner, holding its lock: the spans other heaps gave back while it was busy. */
void mth_spans_take_back(mth_heap_t *heap) {
  mth_page_t *page = atomic_exchange_explicit(&heap->spans_back, NULL, memory_order_acquire);
  while (page) {
    mth_page_t *next = page->next;
    mth_slices_release(heap, mth_segment_of(page), mth_page_index(page), page->slice_count);
    page = next;
  }
}

