/* Segments: 2 MiB units of the arena.  A span segment belongs to one heap and is cut into
 * spans of 32 KiB slices; a huge segment (a run of slots) holds one block of any thread.
 *
 * Invariants:
 *   - used_mask bit 0 is always set (the header slice); dirty_mask & used_mask == 0.
 *   - a span segment is on its heap's segs_full list iff used_mask == ~0, else on segs_avail.
 *   - for every slice k of a live span starting at s: span_of[k] == mth_span_of_slice(s),
 *     pages[k].slice_offset == (k-s)*sizeof(mth_page_t), and pages[s] describes the span
 *     (pages[k].owner and list: internal.h); a free slice's descriptor has flags
 *     MTH_PAGE_UNUSED, or is all zeros if no span has used the slice since the segment was
 *     made (mth_page_unused).
 *   - at most one empty span segment per heap stays cached (heap->empty_segs); the rest go
 *     back to the arena at once.
 *   - everything above changes only under the segment heap's lock (mth_heap_enter, or another
 *     thread's mth_heap_try_enter_for): the heap itself, a thread freeing for it while it is
 *     away (inbox.c), or another heap borrowing its free slices or giving them back (lend.c).
 *   - heap->idle_slices == the sum of popcount(dirty_mask & ~used_mask) over the heap's span
 *     segments, and mth_gstats.idle_slices the sum over all heaps.
 */
#include "internal.h"

static void mth_seglist_remove(mth_segment_t **head, mth_segment_t *seg) {
  if (seg->prev) seg->prev->next = seg->next;
  else *head = seg->next;
  if (seg->next) seg->next->prev = seg->prev;
  seg->next = seg->prev = NULL;
}

static void mth_seglist_push(mth_segment_t **head, mth_segment_t *seg) {
  seg->prev = NULL;
  seg->next = *head;
  if (*head) (*head)->prev = seg;
  *head = seg;
}

/* Free slices that may be resident ("idle"): counted per heap and in all, so that a heap about
 * to touch fresh memory knows whether another heap has some to lend (lend.c). */
MTH_INLINE int mth_seg_idle(const mth_segment_t *seg) {
  return mth_popcount64(seg->dirty_mask & ~seg->used_mask);
}
static void mth_idle_adjust(mth_segment_t *seg, int delta) {
  if (delta == 0) return;
  mth_heap_t *h = seg->heap;
  MTH_RACY_SET(h->idle_slices, (uint32_t)((int)h->idle_slices + delta));
  atomic_fetch_add_explicit(&mth_gstats.idle_slices, (uint64_t)(int64_t)delta, memory_order_relaxed);
}

static void mth_header_init(mth_segment_t *seg, bool zero) {
  /* a reused slot keeps the header its last span segment left, including which slices are
   * still resident; anything else (first use, or a slot that was inside a huge block) is
   * either known zero or assumed dirty */
  uint64_t dirty = ~(uint64_t)0;
  bool reused = !zero && mth_segment_freed(seg) && seg->kind == MTH_SEG_SPANS && seg->used_mask == 1;
  if (zero) dirty = 0;
  else if (reused) dirty = seg->dirty_mask;
  if (reused) {
    /* every span of the last segment here was released, so its descriptors are free slices'
     * (MTH_PAGE_UNUSED) or never used (zeros): both mean "no span" (mth_page_unused), and
     * they stay as they are.  Checking each for zeros was 5600 instructions a segment, most
     * of a large malloc when batches of them cycle whole segments through the arena (100
     * mallocs then 100 frees of 200 KB: 10 segments a round) */
    memset(seg, 0, offsetof(mth_segment_t, pages) + sizeof(mth_page_t));
  } else if (!zero) {
    /* the descriptors back to zeros, but only those that are not: reading a page the last
     * segment here never wrote (or that was purged) maps the zero page, writing it would
     * make it resident */
    memset(seg, 0, offsetof(mth_segment_t, pages) + sizeof(mth_page_t));
    for (size_t k = 1; k < MTH_SLICES; k++) {
      const uint64_t *w = (const uint64_t *)&seg->pages[k];
      uint64_t any = 0;
      for (size_t i = 0; i < sizeof(mth_page_t) / sizeof *w; i++) any |= w[i];
      if (any) memset(&seg->pages[k], 0, sizeof(mth_page_t));
    }
  }
  /* the masks are read by other threads' statistics (stats.c) */
  MTH_RACY_SET(seg->used_mask, (uint64_t)1);
  MTH_RACY_SET(seg->dirty_mask, dirty & ~(uint64_t)1);
  /* the other descriptors stay zero, "never used" (mth_page_unused): writing them would
   * fault in the header's other two pages */
  MTH_RACY_SET(seg->pages[0].flags, MTH_PAGE_META);
  for (size_t k = 0; k < MTH_SLICES; k++) MTH_RACY_SET(seg->span_of[k], mth_span_of_slice(k));
}

static mth_segment_t *mth_segment_new(mth_heap_t *heap) {
  bool zero;
  mth_segment_t *seg = mth_arena_alloc(1, 0, 0, &zero);
  if (!seg) return NULL;
  mth_header_init(seg, zero);
  seg->kind = MTH_SEG_SPANS;
  seg->nslots = 1;
  seg->heap = heap;
  MTH_RACY_ADD(heap->st_segment_ops, 1);
  mth_segment_publish(seg);
  mth_seglist_push(&heap->segs_avail, seg);
  heap->empty_segs++;
  mth_idle_adjust(seg, mth_seg_idle(seg));
  mth_segmap_set(seg, true);
  return seg;
}

static void mth_segment_free(mth_heap_t *heap, mth_segment_t *seg) {
  mth_idle_adjust(seg, -mth_seg_idle(seg));
  mth_seglist_remove(&heap->segs_avail, seg);
  heap->empty_segs--;
  MTH_RACY_ADD(heap->st_segment_ops, 1);
  mth_segmap_set(seg, false);
  seg->heap = NULL;
  __atomic_store_n(&seg->cookie, mth_cookie_freed(seg), __ATOMIC_RELEASE);
  mth_arena_free(seg, 1, false);
}

static void mth_pages_add(size_t bytes, bool add) {
  if (add) {
    uint64_t now = atomic_fetch_add_explicit(&mth_gstats.pages_in_use, bytes, memory_order_relaxed) + bytes;
    uint64_t peak = atomic_load_explicit(&mth_gstats.pages_peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&mth_gstats.pages_peak, &peak, now,
                                                                memory_order_relaxed, memory_order_relaxed)) {
    }
  } else {
    atomic_fetch_sub_explicit(&mth_gstats.pages_in_use, bytes, memory_order_relaxed);
  }
}

/* Marks slices [idx, idx+n) of seg used, as slices k >= 1 of a span starting at first. */
void mth_slices_claim(mth_heap_t *heap, mth_segment_t *seg, size_t first, size_t idx, size_t n,
                      bool *is_zero) {
  uint64_t bits = mth_run_bits(idx, n);
  if (seg->used_mask == 1) heap->empty_segs--;
  mth_idle_adjust(seg, -mth_popcount64(seg->dirty_mask & bits));
  MTH_RACY_SET(seg->used_mask, seg->used_mask | bits);
  if (is_zero) *is_zero = (seg->dirty_mask & bits) == 0;
  MTH_RACY_SET(seg->dirty_mask, seg->dirty_mask & ~bits);
  if (seg->used_mask == ~(uint64_t)0) {
    mth_seglist_remove(&heap->segs_avail, seg);
    mth_seglist_push(&heap->segs_full, seg);
    seg->on_full_list = true;
  }
  for (size_t k = idx; k < idx + n; k++) {
    MTH_RACY_SET(seg->span_of[k], mth_span_of_slice(first));
    if (k == first) continue;
    MTH_RACY_SET(seg->pages[k].slice_offset, (uint16_t)((k - first) * sizeof(mth_page_t)));
    MTH_RACY_SET(seg->pages[k].flags, 0);
    MTH_RACY_SET(seg->pages[k].owner, NULL);
  }
  mth_pages_add(n << MTH_SLICE_SHIFT, true);
  MTH_RACY_ADD(heap->st_span_ops, 1);
}

/* Where a span of n slices goes.  Free slices that are still resident (dirty) are worth
 * reusing: every clean slice a span takes is memory the program has not touched yet, while the
 * dirty ones stay resident until the purge anyway.  So the window chosen is the one that covers
 * the most dirty slices, and among equals the one in the shortest free run (best fit: a page of
 * one slice does not break up the run a large block will want next).  Without that, churn of
 * spans of mixed lengths leaves dirty fragments that no span fits, and each new span touches
 * fresh memory (mstress: as much memory dirty and free as in use).
 *
 * A block that is growing (realloc moved it to a bigger size) asks for room: free slices behind
 * it, claimed with it (mth_span_alloc), so that its next growth is in place.  It goes to the
 * start of a free run that long, its own slices over resident ones and the room over untouched
 * ones where it can, then the shortest such run.
 *
 * The search stops at a perfect window (all dirty, exactly filling its run) and otherwise looks
 * at MTH_FIT_SEGMENTS segments past the first that had room, so a heap of many segments does
 * not walk them all for every span. */
#define MTH_FIT_SEGMENTS 8

static void mth_fit_segment(mth_segment_t *seg, size_t n, size_t room, mth_fit_t *best) {
  uint64_t free = ~seg->used_mask;   /* bit 0, the header, is always used */
  while (free) {
    int s = __builtin_ctzll(free);
    uint64_t rest = free >> s;
    int len = rest == ~(uint64_t)0 ? 64 - s : __builtin_ctzll(~rest);
    uint64_t run = mth_run_bits((size_t)s, (size_t)len);
    free &= ~run;
    if ((size_t)len < n + room) continue;
    uint64_t dirty = seg->dirty_mask & run;
    int at = s, most = 0;
    if (room) {
      /* the block over resident slices, the room it grows into over untouched ones */
      most = mth_popcount64(dirty & mth_run_bits((size_t)s, n)) -
             mth_popcount64(dirty & mth_run_bits((size_t)s + n, room));
    } else if (dirty) {
      /* slide the window over the run, counting the dirty slices it covers */
      int d = mth_popcount64(dirty & mth_run_bits((size_t)s, n));
      most = d;
      for (int p = s + 1; p + (int)n <= s + len && most < (int)n; p++) {
        d += (int)((dirty >> (p + n - 1)) & 1) - (int)((dirty >> (p - 1)) & 1);
        if (d > most) most = d, at = p;
      }
    }
    if (best->seg == NULL || most > best->dirty || (most == best->dirty && len < best->runlen)) {
      best->seg = seg;
      best->idx = at;
      best->dirty = most;
      best->runlen = len;
    }
  }
}

/* The best window of n slices among a heap's segments (mth_fit_segment), room behind it if
 * asked and found. */
mth_fit_t mth_fit_heap(mth_heap_t *heap, size_t n, size_t *room) {
  mth_fit_t best = {NULL, 0, 0, 0};
  for (;;) {
    best.dirty = -(int)MTH_SLICES;
    int after = 0;
    for (mth_segment_t *seg = heap->segs_avail; seg; seg = seg->next) {
      mth_fit_segment(seg, n, *room, &best);
      if (best.seg && ((best.dirty == (int)n && best.runlen == (int)(n + *room)) || ++after > MTH_FIT_SEGMENTS)) break;
    }
    if (best.seg || *room == 0) break;
    *room = 0;
  }
  return best;
}

/* A span of n slices, or of n + room where that fits (the room claimed too: untouched slices
 * cost no memory, and nobody else's span lands in the way of the growth): the best window of
 * the heap's segments (above), else a new segment. */
mth_page_t *mth_span_alloc(mth_heap_t *heap, size_t n, size_t room, bool *is_zero) {
  mth_fit_t best;
  size_t want_room = room;
search:
  room = want_room;
  best = mth_fit_heap(heap, n, &room);
  /* Empty pages and the freed large span a heap keeps for reuse (page.c) are resident memory
   * no other span may use: before this span touches fresh slices, they go back and the search
   * runs again (mth_pages_give_back_kept).  A kept large span regardless left `mstress -t 8`
   * at 61-66 MiB instead of 49 (eight of them). */
  if ((!best.seg || best.dirty < (int)n) && mth_pages_give_back_kept(heap)) goto search;
  /* Blocks in the block caches (bcache.c) keep their pages full, and so their slices taken,
   * while the heap would go to the arena for a whole new segment: they go back first, their
   * pages empty and the search runs again.  A growth chain (bench `realloc`: one block of
   * each class from 9 KiB to 128 KiB freed by every chain on its way to 1 MiB) filled the
   * caches, and each 1 MiB step took a new segment: peak RSS 65.3 MiB, 54.8 with this, the
   * same instructions.  Only for a new segment: giving them back whenever a span would touch
   * clean slices also cost `window -m 65536` 2% more instructions and 1.6% more memory. */
  if (!best.seg && heap->bcache_scavenge_ms != 0) {
    mth_bcache_flush(heap);
    goto search;
  }
  /* fresh memory ahead: another heap's resident free slices first (lend.c) */
  if ((!best.seg || best.dirty < (int)n) && want_room == 0) {
    mth_page_t *page = mth_span_borrow(heap, n, !best.seg);
    if (page) {
      if (is_zero) *is_zero = false;
      return page;
    }
  }
  mth_segment_t *seg = best.seg;
  int idx = best.idx;
  if (!seg) {
    seg = mth_segment_new(heap);
    if (!seg) return NULL;
    idx = 1;
  }
  if (1 + n + room <= MTH_SLICES) n += room;   /* room found, or a new segment has it */
  mth_slices_claim(heap, seg, (size_t)idx, (size_t)idx, n, is_zero);
  mth_page_t *page = &seg->pages[idx];
  MTH_RACY_SET(page->slice_offset, 0);
  page->slice_count = (uint8_t)n;
  MTH_RACY_SET(page->flags, 0);
  MTH_RACY_SET(page->owner, NULL);   /* set by mth_page_init */
  return page;
}

static void mth_segment_purge_dirty(mth_segment_t *seg) {
  uint64_t d = seg->dirty_mask & ~seg->used_mask;
  mth_idle_adjust(seg, -mth_popcount64(d));
  while (d) {
    int s = __builtin_ctzll(d);
    uint64_t rest = d >> s;
    int n = rest == ~(uint64_t)0 ? 64 - s : __builtin_ctzll(~rest);
    mth_os_purge((uint8_t *)seg + ((size_t)s << MTH_SLICE_SHIFT), (size_t)n << MTH_SLICE_SHIFT);
    d &= ~mth_run_bits((size_t)s, (size_t)n);
  }
  MTH_RACY_SET(seg->dirty_mask, (uint64_t)0);
  seg->purge_at_ms = 0;
}

/* Returns slices [idx, idx+n) of seg to the free set (dirty, purged after the delay).
 * False when that emptied the segment and it went back to the arena. */
bool mth_slices_release(mth_heap_t *heap, mth_segment_t *seg, size_t idx, size_t n) {
  for (size_t k = idx; k < idx + n; k++) {
    MTH_RACY_SET(seg->pages[k].flags, MTH_PAGE_UNUSED);
    MTH_RACY_SET(seg->pages[k].owner, NULL);
    MTH_RACY_SET(seg->pages[k].slice_offset, 0);
    MTH_RACY_SET(seg->span_of[k], mth_span_of_slice(k));
  }
  mth_pages_add(n << MTH_SLICE_SHIFT, false);
  MTH_RACY_ADD(heap->st_span_ops, 1);
  uint64_t bits = mth_run_bits(idx, n);
  if (seg->on_full_list) {
    mth_seglist_remove(&heap->segs_full, seg);
    mth_seglist_push(&heap->segs_avail, seg);
    seg->on_full_list = false;
  }
  MTH_RACY_SET(seg->used_mask, seg->used_mask & ~bits);
  MTH_RACY_SET(seg->dirty_mask, seg->dirty_mask | bits);
  mth_idle_adjust(seg, (int)n);
  if (seg->used_mask == 1 && ++heap->empty_segs > 1) {
    mth_segment_free(heap, seg);
    return false;
  }
  if (mth_opt.purge_delay_ms == 0) {
    mth_segment_purge_dirty(seg);
  } else if (mth_opt.purge_delay_ms > 0 && seg->purge_at_ms == 0) {
    seg->purge_at_ms = mth_clock_ms() + (uint64_t)mth_opt.purge_delay_ms;
    if (heap->purge_next_ms == 0 || seg->purge_at_ms < heap->purge_next_ms)
      MTH_RACY_SET(heap->purge_next_ms, seg->purge_at_ms);   /* read by mth_heaps_help_absent */
  }
  return true;
}

void mth_span_free(mth_heap_t *heap, mth_page_t *page) {
  page->free = NULL;
  MTH_RACY_SET(page->used, 0);
  mth_segment_t *seg = mth_segment_of(page);
  if (MTH_UNLIKELY(seg->heap != heap)) {
    mth_span_give_back(page);
    return;
  }
  mth_slices_release(heap, seg, mth_page_index(page), page->slice_count);
}

/* The same for a heap whose owner is away (inbox.c): its free slices serve no other heap, so
 * they go back to the OS now rather than after the purge delay (`larson`, whose main thread
 * fills the arrays and waits in pthread_join: peak RSS at 4 threads 32.8 MiB with the delay,
 * 23.9 at once).  A segment that emptied went to the arena instead, where any heap takes it.
 * But an owner that was only waiting for the freers -- a producer whose consumer frees its
 * batch while it sleeps (`malloc_test` at 4 and 8 pairs on 2 cores) -- comes back and faults
 * the same memory in again: 636 K page faults and 2.5 s of system time against mimalloc's 83 K.
 * So once an owner has come back after such a purge (mth_heap_tick_due counts it), its slices
 * wait out the delay like its own frees'; other threads' ticks still purge them when due if it
 * does not come back again (heap.c, mth_heaps_help_absent). */
void mth_span_free_now(mth_heap_t *heap, mth_page_t *page) {
  mth_segment_t *seg = mth_segment_of(page);
  size_t idx = mth_page_index(page), n = page->slice_count;
  page->free = NULL;
  MTH_RACY_SET(page->used, 0);
  if (seg->heap != heap) {   /* borrowed: the slices are another heap's, which may want them */
    mth_span_give_back(page);
    return;
  }
  if (!mth_slices_release(heap, seg, idx, n) || mth_opt.purge_delay_ms < 0) return;
  if (heap->absent_returns >= MTH_ABSENT_RETURNS) return;   /* it comes back: the delay */
  heap->absent_purged = 1;
  uint64_t bits = mth_run_bits(idx, n);
  if ((seg->dirty_mask & bits) == 0) return;   /* purged already (delay 0) */
  mth_idle_adjust(seg, -mth_popcount64(seg->dirty_mask & bits));
  mth_os_purge((uint8_t *)seg + (idx << MTH_SLICE_SHIFT), n << MTH_SLICE_SHIFT);
  MTH_RACY_SET(seg->dirty_mask, seg->dirty_mask & ~bits);
}

/* realloc of a large block by its owner to size bytes: shrink the span by giving back its tail,
 * or grow it over the free slices right behind it.  The block never moves, so nothing is
 * copied; false when the slices behind are taken (the caller then copies). */
bool mth_span_resize(mth_heap_t *heap, mth_page_t *page, size_t size) {
  mth_segment_t *seg = mth_segment_of(page);
  size_t n = (size + MTH_SLICE_SIZE - 1) >> MTH_SLICE_SHIFT;
  size_t idx = mth_page_index(page), have = page->slice_count;
  if (n != have) {
    /* a borrowed span's slices are its lender's: changed under the lender's lock, if it can be
     * had at once (else the caller copies) */
    mth_heap_t *owner = seg->heap;
    mth_lender_t how = owner == heap ? MTH_LENDER_HELD : mth_lender_enter(owner);
    if (how == MTH_LENDER_BUSY) return false;
    bool ok = true;
    if (n < have) {
      mth_slices_release(owner, seg, idx + n, have - n);
    } else if (idx + n > MTH_SLICES || (seg->used_mask & mth_run_bits(idx + have, n - have))) {
      ok = false;
    } else {
      mth_slices_claim(owner, seg, idx, idx + have, n - have, NULL);
    }
    if (how == MTH_LENDER_TAKEN) mth_heap_leave_for(owner);
    if (!ok) return false;
  }
  page->slice_count = (uint8_t)n;
  MTH_RACY_SET(page->block_size, (uint32_t)mth_large_usable(size));
  return true;
}

void mth_segments_purge(mth_heap_t *heap, uint64_t now, bool force) {
  uint64_t next = 0;
  for (mth_segment_t *seg = heap->segs_avail; seg; seg = seg->next) {
    if (seg->purge_at_ms == 0 && !(force && seg->dirty_mask)) continue;
    if (force || seg->purge_at_ms <= now) mth_segment_purge_dirty(seg);
    else if (next == 0 || seg->purge_at_ms < next) next = seg->purge_at_ms;
  }
  MTH_RACY_SET(heap->purge_next_ms, next);
}

/* Thread exit or mtheap_collect: the cached empty segment goes back to the arena. */
void mth_segment_release_empty(mth_heap_t *heap) {
  mth_segment_t *seg = heap->segs_avail;
  while (seg && heap->empty_segs) {
    mth_segment_t *next = seg->next;
    if (seg->used_mask == 1) mth_segment_free(heap, seg);
    seg = next;
  }
}

/* ---- huge blocks: a run of slots of their own, any thread may free them ---- */

void *mth_huge_alloc(mth_heap_t *heap, size_t size, size_t align, bool zero) {
  size_t off, nslots, lead = 0, run_align = 0;
  if (align <= MTH_SLICE_SIZE) off = MTH_SLICE_SIZE;
  else if (align < MTH_SEG_SIZE) off = align;
  else off = MTH_SEG_SIZE, lead = 1, run_align = align;   /* header in the slot before */
  if (size > MTH_MAX_ALLOC) return NULL;
  nslots = (size + off + MTH_SEG_SIZE - 1) >> MTH_SEG_SHIFT;
  bool is_zero;
  mth_segment_t *seg = mth_arena_alloc(nslots, run_align, lead, &is_zero);
  if (!seg) return NULL;
  /* The header's fields, span_of (all 0: every slice leads the slow paths to pages[0]) and
   * pages[0], whose META flags and null owner send a free to the checked path.  Nothing else
   * reads pages[1..] of a huge segment (every lookup by slice tests kind first), so they keep
   * what the slot held: zeroing the whole 8 KiB header was most of malloc+free of a huge block
   * (9300 instructions, glibc 308) and made its three pages resident. */
  if (!is_zero) memset(seg, 0, offsetof(mth_segment_t, pages) + sizeof(mth_page_t));
  seg->kind = MTH_SEG_HUGE;
  seg->nslots = (uint32_t)nslots;
  seg->heap = NULL;
  MTH_RACY_SET(seg->used_mask, ~(uint64_t)0);
  seg->huge_block = (uint8_t *)seg + off;
  seg->huge_size = mth_huge_usable(size, (nslots << MTH_SEG_SHIFT) - off);
  MTH_RACY_SET(seg->pages[0].flags, MTH_PAGE_META);
  /* ... except the descriptor of the slice the block starts in: free's fast path reads its
   * owner tag (alloc.h), and a tag left by a span of this slot's past could name the very
   * heap freeing the block */
  if (off < MTH_SEG_SIZE) MTH_RACY_SET(seg->pages[off >> MTH_SLICE_SHIFT].owner, NULL);
  mth_segment_publish(seg);
  mth_segmap_set(seg, true);
  mth_pages_add(nslots << MTH_SEG_SHIFT, true);
  if (heap) MTH_RACY_ADD(heap->st_huge, 1);
  if (zero && !is_zero) memset(seg->huge_block, 0, size);
  return seg->huge_block;
}

void mth_huge_free(mth_segment_t *seg) {
  mth_segmap_set(seg, false);
  __atomic_store_n(&seg->cookie, 0, __ATOMIC_RELEASE);
  mth_pages_add((size_t)seg->nslots << MTH_SEG_SHIFT, false);
  /* its slots stay resident for reuse only briefly (MTH_HUGE_KEEP_MS), not the purge delay */
  long keep = mth_opt.purge_delay_ms;
  if (keep > MTH_HUGE_KEEP_MS) keep = MTH_HUGE_KEEP_MS;   /* -1 (never purge) stays */
  mth_arena_free_keep(seg, seg->nslots, false, keep);
}

/* The huge segment owning p (p must be its block), or NULL. */
mth_segment_t *mth_huge_lookup(const void *p) {
  mth_segment_t *seg = mth_segment_of(p);
  if (!mth_segmap_test(seg)) {
    seg = mth_arena_find_head(p);
    if (!seg) return NULL;
  }
  if (!mth_segment_valid(seg) || seg->kind != MTH_SEG_HUGE) return NULL;
  return seg;
}

/* Resize in place (shrink, or grow into free slots behind) or move the pages with mremap.
 * NULL when neither works: the caller copies. */
void *mth_huge_realloc(mth_segment_t *seg, void *p, size_t size) {
  size_t off = (size_t)((uint8_t *)p - (uint8_t *)seg);
  size_t need = (off + size + MTH_SEG_SIZE - 1) >> MTH_SEG_SHIFT;
  size_t have = seg->nslots;
  mth_heap_t *heap = mth_tls_heap;
  if (need <= have) {
    if (need < have) {
      mth_arena_free((uint8_t *)seg + (need << MTH_SEG_SHIFT), have - need, false);
      mth_pages_add((have - need) << MTH_SEG_SHIFT, false);
      seg->nslots = (uint32_t)need;
    }
    MTH_RACY_SET(seg->huge_size, mth_huge_usable(size, (need << MTH_SEG_SHIFT) - off));
    if (heap != &mth_heap_empty) MTH_RACY_ADD(heap->st_realloc_inplace, 1);
    return p;
  }
  if (mth_arena_try_extend(seg, have, need)) {
    mth_pages_add((need - have) << MTH_SEG_SHIFT, true);
    seg->nslots = (uint32_t)need;
    MTH_RACY_SET(seg->huge_size, mth_huge_usable(size, (need << MTH_SEG_SHIFT) - off));
    if (heap != &mth_heap_empty) MTH_RACY_ADD(heap->st_realloc_inplace, 1);
    return p;
  }
  if (off >= MTH_SEG_SIZE) return NULL;   /* over-aligned blocks: copy */
  bool is_zero;
  mth_segment_t *dst = mth_arena_alloc(need, 0, 0, &is_zero);
  if (!dst) return NULL;
  mth_segmap_set(seg, false);
  if (!mth_os_remap_fixed(seg, have << MTH_SEG_SHIFT, dst, need << MTH_SEG_SHIFT)) {
    mth_segmap_set(seg, true);
    mth_arena_free(dst, need, !is_zero ? false : true);
    return NULL;
  }
  mth_os_rereserve(seg, have << MTH_SEG_SHIFT);
  mth_arena_free(seg, have, true);
  mth_pages_add((need - have) << MTH_SEG_SHIFT, true);
  dst->nslots = (uint32_t)need;
  dst->huge_block = (uint8_t *)dst + off;
  dst->huge_size = mth_huge_usable(size, (need << MTH_SEG_SHIFT) - off);
  mth_segment_publish(dst);
  mth_segmap_set(dst, true);
  if (heap != &mth_heap_empty) MTH_RACY_ADD(heap->st_realloc_mremap, 1);
  return dst->huge_block;
}
