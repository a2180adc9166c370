/* Pages: the spans that hold blocks of one size class, and the slow paths of malloc and free
 * that run when a page's free list is empty, full, or becomes empty.
 *
 * Invariants:
 *   - bins[b] holds the heap's pages of class b that may have a free block; heap->direct[]
 *     entries of class b point at bins[b].first (or, with none, at the class's block cache,
 *     bcache.c, once it is set up, else at mth_page_empty) -- updated whenever the first page
 *     changes, so the fast path never needs a NULL check.  One exception: from the time the
 *     first page runs dry while the class's cache has blocks until the cache runs dry, they
 *     name the cache; the slow path that finds it dry names the first page again.
 *   - a page with MTH_PAGE_FULL set is in no queue at all (next == prev == NULL): nothing ever
 *     walks the full pages, and a list of them cost every full/unfull transition two or three
 *     cache misses on other pages' descriptors (perf on `window -m 65536`).
 *   - an empty page (used == 0) that is the only page of a class up to MTH_RETAIN_MAX stays,
 *     so a malloc/free ping-pong does not build and tear down a page each time (the free fast
 *     path leaves it without a call).  Any other empty page stays in its queue too, but is
 *     listed in the heap's retired ring (page->retired set): at most MTH_RETIRED_MAX of them,
 *     each released when it leaves the ring -- pushed out by a newer one or older than
 *     MTH_RETIRED_TICKS ticks, or with the whole ring when a new span would take fresh slices
 *     (mth_pages_give_back_kept) -- unless it was reused meanwhile.  A listed page released by
 *     another path (a page of aligned blocks emptied after its reuse) leaves the ring at once,
 *     so the ring never names a span that went back to its segment.  So a thread caches at most
 *     one empty page per small class plus MTH_RETIRED_MAX pages (of any class), and the
 *     latter only while it keeps allocating.
 */
#include "internal.h"

MTH_HIDDEN mth_page_t mth_page_empty;

/* Span length for a class, from the distance between its blocks' starts (its size, or from
 * MTH_SPREAD_MIN a whole number of slices: internal.h).  Up to 8 KiB blocks, room for 16
 * blocks in one slice, or two (64 KiB) from 2 KiB up: a thread holds about one page of every
 * class it uses, so short pages keep many threads lean (mstress -t 8, slices of 32 KiB),
 * while 16 blocks a page keep a batch of 4 KiB blocks off the slow path (callgrind, hotpath's
 * 100 mallocs then 100 frees: 91.5 instructions per block with pages of 8, 73 with 16).
 * Above 8 KiB, room for four blocks.  A span of a big class is touched only as far as its
 * blocks are used, but long spans spread a heap over more of its segments (mstress -t 2: peak
 * RSS 22 MiB with eight blocks, 17 with four, 16 with two), while short ones fill up at once
 * and send malloc and free to their slow paths (callgrind on a loop like bench's `window -m
 * 65536`: 151, 213 and 292 instructions per free+malloc). */
static size_t mth_bin_slices(size_t stride) {
  if (stride <= MTH_RETAIN_MAX) {
    size_t n = (stride * 16 + MTH_SLICE_SIZE - 1) >> MTH_SLICE_SHIFT;
    size_t most = MTH_SMALL_PAGE_MAX >> MTH_SLICE_SHIFT;
    return n > most ? most : n;
  }
  size_t n = (stride * 4 + MTH_SLICE_SIZE - 1) >> MTH_SLICE_SHIFT;
  size_t most = MTH_LARGE_MAX >> MTH_SLICE_SHIFT;   /* never reached by a class: 128 KiB x 4 is 16 */
  return n > most ? most : n;
}

/* The direct-table entries of each class, [first, last]: computed once (mth_pages_init), as
 * the update runs whenever a class's front page changes -- several times per 100 blocks in
 * batches of 16 KiB blocks, where computing the range each time was a fifth of all the
 * instructions (callgrind on bench/tools/hotpath 16384 batch). */
static uint16_t mth_direct_range[MTH_BINS][2];

void mth_pages_init(void) {
  for (size_t bin = 1; bin < MTH_BINS; bin++) {
    mth_direct_range[bin][0] = (uint16_t)(bin == 1 ? 0 : mth_direct_index(mth_bin_size(bin - 1)) + 1);
    mth_direct_range[bin][1] = (uint16_t)mth_direct_index(mth_bin_size(bin));
    size_t n = (size_t)mth_direct_range[bin][1] + 1 - mth_direct_range[bin][0];
    if (n != 1 && n != 2 && n != 4 && n != 8 && n != 16)   /* what mth_direct_point writes */
      mth_fatal("class %zu spans %zu direct-table entries", bin, n);
  }
}

/* A class's range is 1, 2, 4, 8 or 16 entries (16 for the 2-4 KiB classes, checked by
 * mth_pages_init): written in pairs, unrolled.  Pages change at the front of a queue on most
 * of a churning program's slow paths (mth_page_unfull), and the loop of single stores was
 * most of that: callgrind on `window -n 300000` (bench/workloads), 262 -> 255 M in all. */
static void mth_direct_point(mth_heap_t *heap, size_t bin, mth_page_t *page) {
  mth_page_t **d = &heap->direct[mth_direct_range[bin][0]];
  size_t n = (size_t)mth_direct_range[bin][1] + 1 - mth_direct_range[bin][0];
  typedef uintptr_t mth_pair_t __attribute__((vector_size(2 * sizeof(uintptr_t))));
  const mth_pair_t two = {(uintptr_t)page, (uintptr_t)page};
  if (n == 1) {
    d[0] = page;
    return;
  }
  if (n == 16) {
    memcpy(d + 8, &two, sizeof two);
    memcpy(d + 10, &two, sizeof two);
    memcpy(d + 12, &two, sizeof two);
    memcpy(d + 14, &two, sizeof two);
  }
  if (n >= 8) {
    memcpy(d + 4, &two, sizeof two);
    memcpy(d + 6, &two, sizeof two);
  }
  if (n >= 4) memcpy(d + 2, &two, sizeof two);
  memcpy(d, &two, sizeof two);
}

/* direct[] of bin -> its queue's first page; with none, the class's block cache (bcache.c)
 * or, while that is not set up, mth_page_empty. */
void mth_direct_update(mth_heap_t *heap, size_t bin) {
  mth_page_t *page = heap->bins[bin].first;
  /* a cache never set up has an empty list too, but its descriptor would be touched */
  if (!page) page = mth_bcache_used(heap, bin) ? &heap->bcache[bin - MTH_BCACHE_BIN0] : &mth_page_empty;
  mth_direct_point(heap, bin, page);
}

static void mth_queue_remove(mth_queue_t *q, mth_page_t *page) {
  if (page->prev) page->prev->next = page->next;
  else q->first = page->next;
  if (page->next) page->next->prev = page->prev;
  page->next = page->prev = NULL;
}

static void mth_queue_push_front(mth_queue_t *q, mth_page_t *page) {
  page->prev = NULL;
  page->next = q->first;
  if (q->first) q->first->prev = page;
  q->first = page;
}

static void mth_queue_insert_after(mth_page_t *at, mth_page_t *page) {
  page->prev = at;
  page->next = at->next;
  if (at->next) at->next->prev = page;
  at->next = page;
}

void mth_page_flush_stats(mth_heap_t *heap, mth_page_t *page) {
  MTH_RACY_ADD(heap->st_mallocs[page->bin], (uint64_t)(MTH_HEARTBEAT - page->credit));
  MTH_RACY_SET(page->credit, MTH_HEARTBEAT);
}

/* The fast path's malloc that used up its page's credit: the block is the caller's already;
 * the heap's tick runs now (remote frees, purging), as it would on a slow path. */
void *mth_malloc_heartbeat(mth_page_t *page, mth_block_t *b) {
  mth_heap_t *heap = mth_tls_heap;
  mth_heap_enter(heap);
  if (page->flags & MTH_PAGE_META) {   /* a block cache's, every MTH_BCACHE_BEAT pops */
    mth_bcache_beat(heap, page);
    mth_heap_tick(heap);
  } else {                              /* a page's, every MTH_HEARTBEAT mallocs */
    mth_page_flush_stats(heap, page);
    mth_heap_tick_beat(heap);
  }
  mth_heap_leave(heap);
  return b;
}

void mth_page_init(mth_heap_t *heap, mth_page_t *page, size_t bin, size_t bs) {
  page->free = NULL;
  page->next = page->prev = NULL;
  MTH_RACY_SET(page->used, 0);
  page->capacity = 0;
  page->retired = 0;
  MTH_RACY_SET(page->credit, MTH_HEARTBEAT);
  MTH_RACY_SET(page->bin, (uint8_t)bin);
  MTH_RACY_SET(page->block_size, (uint32_t)bs);
  size_t stride = bin == MTH_BIN_LARGE ? bs : mth_bin_stride(bin);
  page->reserved = (uint16_t)(((size_t)page->slice_count << MTH_SLICE_SHIFT) / stride);
  MTH_RACY_SET(page->home, heap);
  mth_page_set_flags(page, 0, heap);
}

/* How many blocks a refill of a page's allocation list carves: the blocks that start within
 * one 4 KiB OS page (at least one).  Carving writes each block's first word, so every block
 * carved ahead of use is a resident page even if the program never asks for it: the earlier
 * rule (up to 8 blocks within 32 KiB) made the first 4 KiB malloc of a program -- stdio's
 * buffer, in nearly every one -- fault in 32 KiB, and any class from 1 KiB up carved 2-8 pages
 * ahead.  Carving less only sends a page's first fill to the slow path more often (one call
 * per 4 KiB handed out), which is small next to the fault each new page costs anyway. */
#define MTH_LIST_BYTES ((size_t)4 << 10)
MTH_INLINE size_t mth_list_min(size_t bs) {
  size_t n = MTH_LIST_BYTES / bs;
  return n ? n : 1;
}

/* The heap's bytes of blocks carved in pages of classes below MTH_BCACHE_BIG, as pages are
 * carved and released, and with them whether the heap is large (bcache.c: whether those
 * classes' full pages send their frees to the block caches).  Carved, not spanned: a page is
 * carved as far as its class was ever used at once, while every class used at all has a page
 * of 32 KiB or more (a program with 500 KB live in forty classes spans more than 1 MiB). */
static void mth_heap_count_small(mth_heap_t *heap, size_t bytes, bool add) {
  if (add) heap->small_bytes += bytes;
  else heap->small_bytes -= bytes;
  heap->lifo = heap->small_bytes > MTH_LIFO_BYTES && mth_opt.purge_delay_ms != 0 && mth_opt.bcache;
}

/* A page's carved blocks out of the count, as its span goes back. */
static void mth_heap_uncount(mth_heap_t *heap, const mth_page_t *page) {
  if (page->bin != MTH_BIN_LARGE && page->bin < MTH_BCACHE_BIG)
    mth_heap_count_small(heap, (size_t)page->capacity * page->block_size, false);
}

/* Carve n more blocks (as many as are left, if fewer) into the free list.  Carving writes the
 * first word of each block only, and a fresh page is carved a list's worth at a time, so it
 * costs page faults only as it is used. */
static void mth_page_extend(mth_heap_t *heap, mth_page_t *page, size_t n) {
  size_t bs = page->block_size, st = mth_bin_stride(page->bin);
  size_t left = (size_t)page->reserved - page->capacity;
  if (n > left) n = left;
  if (page->bin < MTH_BCACHE_BIG) mth_heap_count_small(heap, n * bs, true);
  uint8_t *start = mth_page_start(page) + (size_t)page->capacity * st;
  for (size_t i = 0; i + 1 < n; i++) ((mth_block_t *)(start + i * st))->next = (mth_block_t *)(start + (i + 1) * st);
  ((mth_block_t *)(start + (n - 1) * st))->next = page->free;
  page->free = (mth_block_t *)start;
  page->capacity = (uint16_t)(page->capacity + n);
}

static mth_page_t *mth_page_new(mth_heap_t *heap, size_t bin) {
  size_t bs = mth_bin_size(bin);
  mth_page_t *page = mth_span_alloc(heap, mth_bin_slices(mth_bin_stride(bin)), 0, NULL);
  if (!page) return NULL;
  mth_page_init(heap, page, bin, bs);
  mth_queue_push_front(&heap->bins[bin], page);
  return page;
}

/* The pages at the front of bin's queue that are full (no free block, nothing left to carve)
 * leave it, so direct[] moves on to a page with room or, with none, to the block cache. */
static void mth_bin_drop_full(mth_heap_t *heap, size_t bin) {
  mth_queue_t *q = &heap->bins[bin];
  mth_page_t *first = q->first, *page;
  while ((page = q->first) != NULL && !page->free && page->capacity == page->reserved) {
    mth_page_flush_stats(heap, page);
    mth_queue_remove(q, page);
    mth_page_set_flags(page, page->flags | MTH_PAGE_FULL, heap);
  }
  if (q->first != first) mth_direct_update(heap, bin);
}

/* A page of bin with a free block at the front of its queue, or NULL when out of memory. */
static mth_page_t *mth_bin_find_page(mth_heap_t *heap, size_t bin) {
  mth_queue_t *q = &heap->bins[bin];
  mth_page_t *first = q->first;
  mth_page_t *page = first;
  while (page) {
    if (page->free) break;
    mth_page_flush_stats(heap, page);
    if (page->capacity < page->reserved) {
      /* a page that got blocks back waits behind (mth_page_unfull): its blocks, still
       * resident, go before fresh memory is carved */
      mth_page_t *next = page->next;
      if (next && next->free) {
        mth_queue_remove(q, next);
        mth_queue_push_front(q, next);
        page = next;
        break;
      }
      mth_page_extend(heap, page, mth_list_min(page->block_size));
      break;
    }
    mth_page_t *next = page->next;
    mth_queue_remove(q, page);
    mth_page_set_flags(page, page->flags | MTH_PAGE_FULL, heap);
    page = next;
  }
  if (!page) {
    page = mth_page_new(heap, bin);
    if (page) mth_page_extend(heap, page, mth_list_min(page->block_size));
  }
  /* the direct table already points at the queue's first page unless that changed */
  if (q->first != first) mth_direct_update(heap, bin);
  return page;
}

/* ---- large spans kept for reuse (heap->lcache) ----
 *
 * Why: a large block (128 KiB..1 MiB) is a span of its own, and malloc+free of one cost a
 * span search, a claim and a release of every slice's descriptor: 641 instructions for 200 KB
 * (callgrind, another block live; glibc 308, tcmalloc 80), 1381 a block in batches of 100.
 * A freed large span is kept as it is instead, and the next large malloc that fits it takes it
 * back with its descriptors untouched.
 *
 * Invariants:
 *   - a kept span is a LARGE page of its heap with used == 0, free == its block and no owner
 *     (flags 0): free's fast path sends a second free of it, or of a pointer into it, to the
 *     slow path, where mth_page_free_local reports it freed twice, as it does a drained remote
 *     one.  Its slices stay claimed, so nothing purges them: it is resident memory, hence
 *     the bounds (MTH_LCACHE_MAX spans, MTH_LCACHE_SLICES slices) and the scavenge, which
 *     gives back a span that stayed a whole interval (100-200 ms of ticks), as the block
 *     caches do (bcache.c);
 *   - a span is taken for a malloc of n slices only if it has n to n + n/4 (at least one
 *     more) slices, the surplus given back at once: a large malloc never holds much more
 *     than it asked for;
 *   - before a span search settles for fresh slices (segment.c), the kept spans go back;
 *   - thread exit, abandonment and mtheap_collect(true) give every kept span back.
 *
 * How many: one.  malloc+free of a large block (and a large block freed while another is
 * live) needs no more; eight spans of 4 MiB in all, kept per heap, left `mstress -t 8` (threads
 * that each free a large block now and then) at 61-66 MiB instead of 49, and still 53-55 with
 * the spans given back before fresh slices; with one span, 16.4 MiB at -t 2 against 16.2. */
static bool mth_lcache_push(mth_heap_t *heap, mth_page_t *page) {
  if (mth_opt.purge_delay_ms == 0 || !mth_opt.bcache || page->flags != 0) return false;
  if (heap->lcache_n == MTH_LCACHE_MAX || heap->lcache_slices + page->slice_count > MTH_LCACHE_SLICES)
    return false;
  heap->lcache[heap->lcache_n++] = page;
  MTH_RACY_SET(heap->lcache_slices, heap->lcache_slices + page->slice_count);   /* read by the statistics */
  /* no owner: free's fast path leaves a second free of it (or of a pointer into it) to the
   * slow path, which reports it as freed twice */
  mth_page_set_flags(page, 0, NULL);
  if (heap->bcache_scavenge_ms == 0) mth_bcache_schedule(heap);
  return true;
}

static void mth_lcache_remove(mth_heap_t *heap, uint32_t i) {
  mth_page_t *page = heap->lcache[i];
  MTH_RACY_SET(heap->lcache_slices, heap->lcache_slices - page->slice_count);
  if (i + 1 < heap->lcache_n)   /* never with one span kept: no libc call for nothing */
    memmove(&heap->lcache[i], &heap->lcache[i + 1], (heap->lcache_n - i - 1) * sizeof heap->lcache[0]);
  heap->lcache_n--;
  if (heap->lcache_n < heap->lcache_low) heap->lcache_low = heap->lcache_n;
}

/* A kept span of n slices or a little more, latest first; its surplus slices go back. */
static mth_page_t *mth_lcache_take(mth_heap_t *heap, size_t n, size_t size) {
  size_t most = n + (n / 4 > 1 ? n / 4 : 1);
  for (uint32_t i = heap->lcache_n; i-- > 0;) {
    mth_page_t *page = heap->lcache[i];
    if (page->slice_count < n || page->slice_count > most) continue;
    mth_lcache_remove(heap, i);
    if (page->slice_count > n) mth_span_resize(heap, page, size);
    page->free = NULL;
    MTH_RACY_SET(page->block_size, (uint32_t)mth_large_usable(size));
    MTH_RACY_SET(page->used, 1);
    mth_page_set_flags(page, 0, heap);
    return page;
  }
  return NULL;
}

/* The scavenge's part (bcache.c): kept spans that stayed the whole interval go back, or all. */
void mth_lcache_scavenge(mth_heap_t *heap, bool all) {
  uint32_t idle = all ? heap->lcache_n : heap->lcache_low;
  while (idle-- > 0 && heap->lcache_n > 0) {
    mth_page_t *page = heap->lcache[0];   /* the oldest */
    mth_lcache_remove(heap, 0);
    mth_span_free(heap, page);
  }
  heap->lcache_low = heap->lcache_n;
}

/* A block of its own span; with room > size, placed where that much could follow it in place
 * (mth_page_alloc_growing). */
static void *mth_large_alloc(mth_heap_t *heap, size_t size, size_t room, bool zero) {
  size_t n = (size + MTH_SLICE_SIZE - 1) >> MTH_SLICE_SHIFT;
  size_t r = room > size ? ((room + MTH_SLICE_SIZE - 1) >> MTH_SLICE_SHIFT) - n : 0;
  if (r == 0 && heap->lcache_n) {
    mth_page_t *page = mth_lcache_take(heap, n, size);
    if (page) {
      MTH_RACY_ADD(heap->st_large, 1);
      void *p = mth_page_start(page);
      if (zero) memset(p, 0, size);
      return p;
    }
  }
  bool is_zero;
  mth_page_t *page = mth_span_alloc(heap, n, r, &is_zero);
  if (!page) return NULL;
  mth_page_init(heap, page, MTH_BIN_LARGE, mth_large_usable(size));
  page->capacity = page->reserved = 1;
  MTH_RACY_SET(page->used, 1);
  MTH_RACY_ADD(heap->st_large, 1);
  void *p = mth_page_start(page);
  if (zero && !is_zero) memset(p, 0, size);
  return p;
}

void *mth_page_alloc_slow(mth_heap_t *heap, size_t size) {
  mth_heap_tick(heap);
  if (size <= MTH_CLASS_MAX) {
    size_t bin = mth_bin_of(size);
    mth_page_t *page = heap->bins[bin].first;
    if ((!page || !page->free) && mth_bcache_used(heap, bin)) {
      mth_page_t *cache = &heap->bcache[bin - MTH_BCACHE_BIN0];
      if (cache->free) {
        /* the class's front page ran dry (or calloc/memalign came here): the full pages leave
         * the queue and the cached blocks serve, already resident and the last freed.  The
         * page now in front may have free blocks or room to carve; direct[] names the cache
         * anyway until it runs dry (below).  With room to carve only, every malloc of the
         * class came back here otherwise: 100 mallocs then 100 frees of 9 KiB blocks (pages
         * of seven) took 184 instructions a block, 82 with this (bench/hotpath.py).  With free
         * blocks, those are of pages that lose blocks, better left to empty (bcache.c):
         * `window -t 1 -m 4096` 0.41 -> 0.38 s (docs/PERFORMANCE.md) */
        mth_bin_drop_full(heap, bin);
        mth_direct_point(heap, bin, cache);
        return mth_bcache_pop(heap, cache);
      }
    }
    if (!page || !page->free) page = mth_bin_find_page(heap, bin);
    if (!page) return NULL;
    /* a cache that ran dry hands direct[] back to the queue's first page */
    if (heap->direct[mth_direct_range[bin][0]] != heap->bins[bin].first)
      mth_direct_update(heap, bin);
    return mth_page_pop(heap, page);
  }
  if (size <= MTH_LARGE_MAX) return mth_large_alloc(heap, size, size, false);
  return mth_huge_alloc(heap, size, 0, false);
}

/* realloc moving a large block to a bigger size: a block that grew once is a growth chain
 * (a vector, a string builder) and will likely grow again, so its new span goes where half as
 * much again is free behind it, up to MTH_LARGE_MAX.  The next steps of the chain then grow in
 * place (mth_span_resize) instead of copying.  With mth_large_usable, bench realloc -t 2 -n 300
 * (chains to 1 MiB) copied 2411 MiB in 50822 moves instead of 4209 MiB in 54803, and 800 MiB
 * instead of 1941 from blocks of 512 KiB and more (bench/tools/realloc_moves.c). */
void *mth_page_alloc_growing(mth_heap_t *heap, size_t size) {
  size_t room = size + size / 2 < MTH_LARGE_MAX ? size + size / 2 : MTH_LARGE_MAX;
  mth_heap_tick(heap);
  return mth_large_alloc(heap, size, room, false);
}

/* calloc's path for sizes whose memory may come straight from the OS already zeroed. */
void *mth_page_alloc_zero(mth_heap_t *heap, size_t size) {
  if (size <= MTH_CLASS_MAX) {
    void *p = mth_page_alloc_slow(heap, size);
    if (p) memset(p, 0, size);
    return p;
  }
  mth_heap_tick(heap);
  if (size <= MTH_LARGE_MAX) return mth_large_alloc(heap, size, size, true);
  return mth_huge_alloc(heap, size, 0, true);
}

/* A full page got a block back: next in line in its bin queue -- second, behind a front page
 * that still has free blocks, else first.  Pages that got blocks back are refilled before the
 * others, so the nearly full pages fill while those losing blocks sit at the back until they
 * empty and go back to the segment.  At the back (FIFO, the rule below 8 KiB once) every page
 * got its turn and none ever emptied: a class that shrank kept all its pages half used
 * (tests/test_pages.c drain: 640 blocks of 1 KiB, half freed, 100 000 replacements: 20 pages
 * kept that way, 10 now).  Not in front of a page with free blocks: the block would be the
 * next malloc, which then finds this page full again and takes the slow path to drop it, two
 * slow paths per block in a program that frees at random (23% of mallocs and 29% of frees in
 * `larson -t 1`); behind it, the page gathers more frees before its turn.  But it goes before
 * the front page carves fresh memory (mth_bin_find_page): carving first cost peak RSS (+7% in
 * `larson -t 2`, `shbench -t 2`, `xmalloc -t 2`, 5 interleaved runs).  cachegrind on `larson
 * -t 1 -n 5000 -o 200000 -g 8`: 1353 -> 1306 M instructions (tcmalloc 1286), `window -m 1024`
 * 244 -> 237 M; time (7 interleaved runs, medians) `larson -t 1 -n 5000 -o 2000000 -g 8` 1.31
 * -> 1.27 s (tcmalloc 1.08), `window -t 1 -w 2000 -n 5000000 -m 4096` 0.39 -> 0.37 s
 * (tcmalloc 0.35); peak RSS unchanged (docs/PERFORMANCE.md). */
static void mth_page_unfull(mth_heap_t *heap, mth_page_t *page) {
  mth_page_set_flags(page, page->flags & ~(uint32_t)MTH_PAGE_FULL, heap);
  mth_queue_t *q = &heap->bins[page->bin];
  if (q->first && q->first->free) {
    mth_queue_insert_after(q->first, page);   /* direct[] names the first page still */
    return;
  }
  mth_queue_push_front(q, page);
  mth_direct_update(heap, page->bin);
}

/* A page still listed in the retired ring leaves it first: the ring must never hold a page whose
 * span went back to the segment (its slices may already carry another span, which a later pop
 * would free).  The entry becomes a hole the ring skips. */
static void mth_retired_forget(mth_heap_t *heap, mth_page_t *page) {
  for (uint32_t k = 0; k < heap->retired_n; k++) {
    uint32_t i = (heap->retired_head + k) % MTH_RETIRED_MAX;
    if (heap->retired[i] == page) {
      heap->retired[i] = NULL;
      MTH_RACY_SET(heap->retired_slices, heap->retired_slices - page->slice_count);
      break;
    }
  }
  page->retired = 0;
}

/* Gives an empty page back to its segment: out of its bin queue, statistics flushed. */
static void mth_page_release(mth_heap_t *heap, mth_page_t *page) {
  if (page->retired) mth_retired_forget(heap, page);
  mth_heap_uncount(heap, page);
  mth_queue_remove(&heap->bins[page->bin], page);
  mth_direct_update(heap, page->bin);
  mth_page_flush_stats(heap, page);
  mth_span_free(heap, page);
}

/* The ring's oldest page leaves it: released if it is still empty (and not the one page a small
 * class keeps anyway), left alone if it was reused. */
static void mth_retired_pop(mth_heap_t *heap) {
  uint32_t i = heap->retired_head;
  mth_page_t *page = heap->retired[i];
  heap->retired[i] = NULL;
  heap->retired_head = (i + 1) % MTH_RETIRED_MAX;
  heap->retired_n--;
  if (page == NULL) return;             /* a hole: released while listed (mth_retired_forget) */
  MTH_RACY_SET(heap->retired_slices, heap->retired_slices - page->slice_count);
  page->retired = 0;
  if (page->used != 0) return;
  mth_queue_t *q = &heap->bins[page->bin];
  if (q->first == page && page->next == NULL && page->block_size <= MTH_RETAIN_MAX) return;
  mth_page_release(heap, page);
}

static void mth_retired_push(mth_heap_t *heap, mth_page_t *page) {
  if (page->retired) return;            /* listed already: emptied, reused and emptied again */
  while (heap->retired_n == MTH_RETIRED_MAX ||
         (heap->retired_n && heap->retired_slices + page->slice_count > MTH_RETIRED_SLICES))
    mth_retired_pop(heap);
  uint32_t i = (heap->retired_head + heap->retired_n) % MTH_RETIRED_MAX;
  heap->retired[i] = page;
  heap->retired_tick[i] = heap->ticks;
  heap->retired_n++;
  MTH_RACY_SET(heap->retired_slices, heap->retired_slices + page->slice_count);   /* read by the statistics */
  page->retired = 1;
}

/* Before a span search settles for fresh slices (segment.c): the empty pages in the retired
 * ring and the kept large span go back, and the search runs again.  What a heap keeps for
 * reuse is resident memory of one class; the ring's pages and the kept span must not make the
 * heap touch new memory for another class.  `python3 -c pass` met some twenty classes above
 * 8 KiB once each (a buffer per module file read), each left an empty page in the ring while
 * the next class took fresh slices: 14.8 MiB peak RSS against glibc's 13.5, 14.1-14.3 with
 * this. */
bool mth_pages_give_back_kept(mth_heap_t *heap) {
  if (heap->retired_n == 0 && heap->lcache_n == 0) return false;
  mth_lcache_scavenge(heap, true);
  while (heap->retired_n) mth_retired_pop(heap);
  return true;
}

/* From the heap's tick: pages kept longer than MTH_RETIRED_TICKS slow-path events go back. */
void mth_retired_expire(mth_heap_t *heap) {
  while (heap->retired_n &&
         heap->ticks - heap->retired_tick[heap->retired_head] > MTH_RETIRED_TICKS)
    mth_retired_pop(heap);
}

/* The page's last block was freed (by the owner, or drained from remote frees). */
static void mth_page_retire(mth_heap_t *heap, mth_page_t *page) {
  if (page->bin == MTH_BIN_LARGE) {
    mth_page_flush_stats(heap, page);
    if (!mth_lcache_push(heap, page)) mth_span_free(heap, page);
    return;
  }
  if (page->flags & MTH_PAGE_FULL) mth_page_unfull(heap, page);
  mth_queue_t *q = &heap->bins[page->bin];
  if (q->first == page && page->next == NULL && page->block_size <= MTH_RETAIN_MAX) return;
  /* a page of aligned blocks sends every free to the slow path: better formatted anew */
  if (page->flags & MTH_PAGE_ALIGNED) mth_page_release(heap, page);
  else mth_retired_push(heap, page);
}

/* The owner's free fast path emptied a page of its queues (or a large span), or brought a
 * block cache to its trip count (alloc.h). */
void mth_free_emptied(mth_heap_t *heap, mth_page_t *list) {
  if ((uintptr_t)list - (uintptr_t)heap->bcache < sizeof heap->bcache) {
    mth_bcache_trip(heap, list);
    return;
  }
  mth_heap_enter(heap);
  mth_page_retire(heap, list);
  mth_heap_leave(heap);
}

/* Another thread frees b into the heap's page for the heap's owner (inbox.c), holding the
 * heap's lock: a full page or a large span.  Neither is in a queue nor named by direct[], so
 * the owner's fast paths change nothing in them (a full page's tag they read, to send a block
 * to its class's cache; a large span's only to free its one block, which is the block being
 * freed here), and what changes here --
 * the page's list and count, and, when it empties, its span, segment and statistics -- only
 * the owner's slow paths touch, under the same lock.  A full page that gets blocks back
 * stays marked full (the owner's next free or drain into it puts it back in its queue); an
 * empty one goes back to its segment at once, not into the retired ring, which would keep it
 * for an owner that is not there, and back to the OS too, as no other heap can use it
 * (mth_span_free_now: not if the owner came back after that before).  False
 * when b is free already. */
bool mth_page_free_for(mth_heap_t *heap, mth_page_t *page, mth_block_t *b) {
  if (b == page->free || page->used == 0) return false;
  b->next = page->free;
  page->free = b;
  MTH_RACY_ADD(page->used, -1);
  /* a full page whose frees went to the block cache: from now on to the owner's slow path,
   * which puts the page back in its queue (mth_page_free_local), or its free blocks would wait
   * for a block of the cache to come back.  The owner's fast path reads the tag without the
   * lock: either value sends its block somewhere correct. */
  if (page->flags == MTH_PAGE_FULL && page->owner != NULL) mth_page_set_flags(page, MTH_PAGE_FULL, NULL);
  if (page->used == 0) {
    if (page->retired) mth_retired_forget(heap, page);   /* listed, then refilled */
    mth_heap_uncount(heap, page);
    mth_page_flush_stats(heap, page);
    mth_span_free_now(heap, page);
  }
  return true;
}

/* b back on its own page's list: the page may leave the full state, or empty. */
static inline void mth_page_push(mth_heap_t *heap, mth_page_t *page, mth_block_t *b) {
  b->next = page->free;
  page->free = b;
  MTH_RACY_ADD(page->used, -1);
  if (page->used == 0) mth_page_retire(heap, page);
  else if (page->flags & MTH_PAGE_FULL) mth_page_unfull(heap, page);
}

/* A free by the owner that the fast path could not finish: page full or aligned, or a block
 * drained from the inbox.  b is the block's start. */
void mth_page_free_local(mth_heap_t *heap, mth_page_t *page, mth_block_t *b) {
  /* free already: the head of the list (as in mth_free_fast), or a page with no block out */
  if (MTH_UNLIKELY(b == page->free || page->used == 0)) {
    mth_free_twice(b);
    return;
  }
  /* a full page with free blocks got them from another thread (mth_page_free_for): back in
   * its queue with this one, not the cache */
  if (page->flags == MTH_PAGE_FULL && !page->free && (page->bin >= MTH_BCACHE_BIG || heap->lifo)) {
    mth_page_t *c = mth_bcache_of(heap, page->bin);
    if (MTH_UNLIKELY(b == c->free)) {
      mth_free_twice(b);
      return;
    }
    /* a cache that was never set up takes nothing: set up at its class's first such free; a
     * full one may be lent more room (bcache.c) */
    if (mth_bcache_put(c, b) ||
        (MTH_UNLIKELY(c->flags == 0) && mth_bcache_setup(heap, c) && mth_bcache_put(c, b)) ||
        (c->flags != 0 && mth_bcache_grow(heap, c) && mth_bcache_put(c, b))) {
      if (heap->bcache_scavenge_ms == 0) mth_bcache_schedule(heap);
      return;
    }
  }
  mth_page_push(heap, page, b);
}

/* b back on its own page's list (from a block cache). */
void mth_page_give_back(mth_heap_t *heap, mth_page_t *page, mth_block_t *b) { mth_page_push(heap, page, b); }

/* Thread exit and mtheap_collect(true): drop the empty pages kept for reuse. */
void mth_heap_release_retained(mth_heap_t *heap) {
  mth_bcache_flush(heap);
  while (heap->retired_n) mth_retired_pop(heap);
  for (size_t bin = 1; bin < MTH_BINS; bin++) {
    mth_page_t *page = heap->bins[bin].first;
    if (page && page->used == 0 && page->next == NULL) mth_page_release(heap, page);
  }
}
