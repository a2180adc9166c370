/* Block caches: blocks freed into full pages, kept per heap and class and handed out again
 * last freed first, so that full pages do not go back and forth between full and not full,
 * and a class spread over many pages reuses the blocks still in cache.
 *
 * Why, above 8 KiB: a page of such a class holds four to seven blocks (mth_bin_slices), so with
 * many blocks live it is full most of the time.  Every free into it put it back into its bin
 * queue (and updated the direct table), and the next malloc took it out again, touching two or
 * three page descriptors each way.  `bench window -m 65536`, one thread: three mallocs and
 * frees in four took the slow paths, the allocator was 19% of the run against tcmalloc's 9%
 * (perf), and the run took 1.10-1.15x tcmalloc's time.
 *
 * Why, up to 8 KiB, once a heap's blocks of these classes pass MTH_LIFO_BYTES (heap->lifo,
 * page.c): a block freed into a page behind the front one waits until malloc gets round to
 * that page, by then out of cache, where tcmalloc's one list per class hands it out next.
 * With the working set past a core's L2 that was the gap left on one thread: `window -t 1 -w
 * 2000 -m 4096` 0.42 s against tcmalloc's 0.37, `larson -t 1 -n 5000` 1.18 against 1.05.
 * Below the bound every block is in cache anyway.  (Always on, `larson -t 1 -n 1000`, 500 KB
 * live, once took 9% longer: free then tested the page's tag for "page" and again for "cache",
 * a branch on whether the page is full that 44% of its frees mispredicted.  Free now pushes
 * onto the list the slice names, without that branch: alloc.h.)
 *
 * How: a block freed into a full page (its slice's list names the cache, alloc.h) goes to the
 * class's cache, which is the free list of a page descriptor inside the heap (heap->bcache[]).
 * When the class's front page runs dry and the cache has blocks, direct[] names the cache
 * until it runs dry in turn, so malloc's fast path pops cached blocks like any other, the last
 * freed first; the blocks of pages with room wait.  Those are the pages losing blocks, which then
 * empty and go back instead of being refilled (test_pages drain), and the cache stays short.
 * A free into a page with room still takes the fast path onto the page's own list.
 *
 * How many: the cache must be about as deep as the class's churn (above 8 KiB, depths of 8
 * and 16 did not move `window`'s time; 32-64 matched tcmalloc's), but a program that stops
 * using a class must not keep its pages pinned.  So a class above 8 KiB may hold up to 2 MiB
 * and one up to 8 KiB 64 KiB (bcache_cap: with 256 KiB, `test_pages drain` kept 24 pages of 4
 * KiB blocks where 21 hold them), and every MTH_BCACHE_SCAVENGE_MS a cache gives back the
 * blocks that stayed in it the whole interval (bcache_low, its low-water mark, sampled at its
 * heartbeats), as tcmalloc's thread caches do.  The interval is short because a burst of frees
 * fills every cache at once: with 1 s, a freed 1 GiB peak (`rss-return`) left 6.2% resident
 * after 3 s against 1.7% without caches, the cached blocks keeping their pages from emptying
 * until the second scavenge.  A depth that adapts to misses and overflows (tcmalloc's
 * max_length) was tried: with 100 mallocs then 100 frees of 16 KiB it stayed short of the
 * batch, and every round sent a quarter of the frees back to their pages (154-228
 * instructions per block against 112 without a cache).
 *
 * Invariants:
 *   - a cached block still counts in its own page's used: the page stays full, in no queue,
 *     and cannot empty while the block is cached.  Cached blocks lie in pages the heap holds
 *     anyway, so the cache maps no memory; what it can do is keep pages from being released;
 *   - a cache holds at most capacity blocks (for a cache, the cap; on line 0 with free and
 *     used, so a free into the cache reads one line of its descriptor): its own cap,
 *     min(MTH_BCACHE_DEPTH, MTH_BCACHE_CLASS_BYTES / size) above 8 KiB and min(MTH_BCACHE_DEPTH,
 *     MTH_BCACHE_SMALL_BYTES / size) up to 8 KiB, plus, above 8 KiB only, what it borrowed
 *     (mth_bcache_grow); heap->bcache_extra is the sum of the loans, in bytes, and never above
 *     MTH_BCACHE_EXTRA_BYTES.  So at most 2 MiB per class and 64 MiB per heap above 8 KiB,
 *     plus 8 MiB lent, and 3.0 MiB per heap for the 56 classes up to 8 KiB; a block left in a
 *     cache is given back within two scavenge intervals (200 ms) of ticks, and a loan once its
 *     class needs it no more (README);
 *   - the descriptor's used is its trip count minus the number of blocks it holds, and never 0
 *     between two calls: free's fast path pushes onto a cache as onto a page, and calls out
 *     when used reaches 0 (mth_bcache_trip), which is at the trip count (mth_bcache_retrip:
 *     the cap + 1, the tick, the scavenge's schedule).  Malloc's pops add one; mth_bcache_put
 *     subtracts one and resets the trip count when it reaches 0.  A cache's next names the
 *     descriptor itself, so that free's test for a page that needs care at 0 calls out for
 *     the cache too.  Its credit and bin count its mallocs as a page's do, with a heartbeat
 *     every MTH_BCACHE_BEAT pops (the tick, and the low-water mark);
 *   - a cache descriptor is in no queue and no segment (flags MTH_PAGE_META, owner NULL):
 *     nothing reaches it from an address but the list of a full page's slices.  Until its
 *     class's first page fills it is all zeros (flags 0, cap 0: it takes no block, and malloc
 *     finds its list empty), and direct[] names mth_page_empty instead, so a thread never
 *     touches the descriptors of the classes it never needed a cache for; heap->bcache_set
 *     lists those set up, the only ones scavenge and flush visit;
 *   - a page's tag and list are set when it fills (mth_page_set_flags), and its class's cache
 *     with them: the frees into a page that filled while the heap was small take the slow
 *     path (mth_page_free_local, which sends them to the cache if the heap is large now), and
 *     one that filled while it was large keeps its list; either is correct, only the cost
 *     differs;
 *   - thread exit, abandonment and mtheap_collect(true) give every cached block back to its page
 *     (mth_bcache_flush), so a parked heap's pages can empty and be released; so does a heap
 *     that finds no room for a span in its segments, before it takes a new one (segment.c);
 *   - with MTHEAP_PURGE_DELAY_MS=0 (memory back at once) or MTHEAP_BCACHE=0 nothing is cached.
 */
#include "internal.h"

#define MTH_BCACHE_SCAVENGE_MS 100

static size_t mth_bcache_cap(size_t bs) {
  if (mth_opt.purge_delay_ms == 0 || !mth_opt.bcache) return 0;
  size_t n = (bs > MTH_RETAIN_MAX ? MTH_BCACHE_CLASS_BYTES : MTH_BCACHE_SMALL_BYTES) / bs;
  return n < MTH_BCACHE_DEPTH ? n : MTH_BCACHE_DEPTH;
}

/* Cache c of heap, all zeros so far (a cache that takes nothing: its cap, capacity, is 0), set
 * up at the class's first free into a full page; true if it may now take blocks.  Setting up
 * every class when the heap is made wrote a 4 KiB page that most threads never need. */
bool mth_bcache_setup(mth_heap_t *heap, mth_page_t *c) {
  size_t bin = MTH_BCACHE_BIN0 + (size_t)(c - heap->bcache);
  /* statistics read these from other threads (relaxed; the flags, written last, say "set up") */
  MTH_RACY_SET(c->credit, MTH_BCACHE_BEAT);
  MTH_RACY_SET(c->bin, (uint8_t)bin);
  MTH_RACY_SET(c->block_size, (uint32_t)mth_bin_size(bin));
  MTH_RACY_SET(c->capacity, (uint16_t)mth_bcache_cap(mth_bin_size(bin)));   /* its cap; read by statistics */
  mth_bcache_retrip(c);
  c->next = c;   /* free's fast path tests next when used reaches 0: see alloc.h */
  MTH_RACY_SET(c->flags, MTH_PAGE_META);   /* last: what statistics test for "set up" */
  size_t k = (size_t)(c - heap->bcache);
  heap->bcache_set[k / 64] |= (uint64_t)1 << (k % 64);
  return c->capacity != 0;
}

/* A cache at its cap, on the free that found it full: it may borrow room past
 * MTH_BCACHE_CLASS_BYTES, half as much again each time, up to MTH_BCACHE_DEPTH blocks, while
 * the heap's loans stay within MTH_BCACHE_EXTRA_BYTES in all.  A class in a burst bigger than
 * 2 MiB (100 mallocs then 100 frees of 64 KiB: 6.4 MiB) then keeps the whole burst instead of
 * sending two thirds of it back to pages that empty, go back to the segment and are taken again
 * (230 instructions a block; tcmalloc 83).  The scavenge takes the loan back once the class
 * holds no more than its own cap. */
bool mth_bcache_grow(mth_heap_t *heap, mth_page_t *c) {
  size_t bs = c->block_size, base = mth_bcache_cap(bs);
  if (base == 0 || c->capacity >= MTH_BCACHE_DEPTH || bs <= MTH_RETAIN_MAX) return false;
  size_t want = c->capacity + (c->capacity + 1) / 2;
  if (want > MTH_BCACHE_DEPTH) want = MTH_BCACHE_DEPTH;
  size_t more = (want - c->capacity) * bs;
  if (heap->bcache_extra + more > MTH_BCACHE_EXTRA_BYTES) {
    more = (MTH_BCACHE_EXTRA_BYTES - heap->bcache_extra) / bs * bs;   /* what is left of it */
    if (more == 0) return false;
  }
  heap->bcache_extra += more;
  MTH_RACY_SET(c->capacity, (uint16_t)(c->capacity + more / bs));
  mth_bcache_retrip(c);
  return true;
}

/* The cache's cap back to its own, as far as what it holds allows; the loan returned. */
static void mth_bcache_shrink(mth_heap_t *heap, mth_page_t *c) {
  if (c->flags == 0) return;   /* never set up: no cap, no loan */
  size_t bs = c->block_size, base = mth_bcache_cap(bs), n = mth_bcache_count(c);
  if (c->capacity <= base) return;
  size_t keep = n > base ? n : base;
  if (keep >= c->capacity) return;
  heap->bcache_extra -= (c->capacity - keep) * bs;
  MTH_RACY_SET(c->capacity, (uint16_t)keep);
}

/* A cache's trip count: where free's fast path, which pushes onto a cache as onto a page and
 * decrements used, finds used at 0 and calls out (mth_bcache_trip).  So used is trip minus the
 * blocks held, and trip the next count at which a free has more to do than push: the cap + 1
 * (the block goes to its page instead), the first block into an empty cache (the scavenge is
 * scheduled if none is), else the next multiple of 16 (the heap's tick, as the slow path's
 * every 16th free into a full page: a thread cycling blocks through its caches may take no
 * malloc slow path for long).  Reset wherever the cap or the count change off the fast paths;
 * malloc's pops only move used up, away from 0. */
void mth_bcache_retrip(mth_page_t *c) {
  uint32_t held = (uint32_t)mth_bcache_count(c);
  uint32_t trip = held == 0 ? 1 : (held | 15) + 1;
  if (trip > (uint32_t)c->capacity + 1) trip = (uint32_t)c->capacity + 1;
  MTH_RACY_SET(c->trip, trip);
  MTH_RACY_SET(c->used, trip - held);
}

/* Free's fast path brought cache c to its trip count (alloc.h: mth_free_emptied): past the
 * cap, the block just pushed comes back off and goes to its page by the slow path (which may
 * lend the cache more room); else the scavenge is scheduled if none is, or the tick runs. */
void mth_bcache_trip(mth_heap_t *heap, mth_page_t *c) {
  uint32_t held = c->trip;
  if (held > c->capacity) {
    mth_block_t *b = c->free;
    c->free = b->next;
    MTH_RACY_SET(c->used, 1);
    mth_free_page_slow(b, mth_page_of(mth_segment_of(b), b));
    return;
  }
  mth_bcache_retrip(c);
  if (heap->bcache_scavenge_ms == 0) mth_bcache_schedule(heap);
  else if ((held & 15) == 0) mth_heap_tick_locked(heap);
}

static mth_block_t *mth_bcache_take(mth_page_t *c) {
  mth_block_t *b = c->free;
  c->free = b->next;
  MTH_RACY_ADD(c->used, 1);
  return b;
}

/* The first block went into a cache since the last scavenge: schedule the next. */
MTH_NOINLINE void mth_bcache_schedule(mth_heap_t *heap) {
  heap->bcache_scavenge_ms = mth_clock_ms() + MTH_BCACHE_SCAVENGE_MS;
}

/* The heartbeat of a cache's pops (its credit ran out): its mallocs counted, and the low-water
 * mark's sample. */
void mth_bcache_beat(mth_heap_t *heap, mth_page_t *cache) {
  size_t k = (size_t)(cache - heap->bcache), n = mth_bcache_count(cache);
  MTH_RACY_ADD(heap->st_mallocs[cache->bin], (uint64_t)(MTH_BCACHE_BEAT - cache->credit));
  MTH_RACY_SET(cache->credit, MTH_BCACHE_BEAT);
  if (n < heap->bcache_low[k]) heap->bcache_low[k] = (uint8_t)n;
}

/* A pop by the slow path (calloc, memalign, or the class's front page full). */
void *mth_bcache_pop(mth_heap_t *heap, mth_page_t *cache) {
  mth_block_t *b = mth_bcache_take(cache);
  MTH_RACY_ADD(cache->credit, -1);
  if (cache->credit == 0) mth_bcache_beat(heap, cache);
  return b;
}

/* From the tick, once per interval: each class gives back what it did not use since the last
 * scavenge (its low-water mark), and starts a new interval at what it holds now. */
/* The caches set up, in order: only those are ever touched (a heap's 88 descriptors are three
 * pages of memory, most of them never written). */
static bool mth_bcache_next(const mth_heap_t *heap, size_t *k) {
  for (size_t w = *k / 64; w < sizeof heap->bcache_set / sizeof heap->bcache_set[0]; w++) {
    uint64_t bits = heap->bcache_set[w];
    if (w == *k / 64) bits &= ~(uint64_t)0 << (*k % 64);
    if (bits) {
      *k = w * 64 + (size_t)__builtin_ctzll(bits);
      return true;
    }
  }
  return false;
}

void mth_bcache_scavenge(mth_heap_t *heap, uint64_t now) {
  size_t held = 0;
  for (size_t k = 0; mth_bcache_next(heap, &k); k++) {
    mth_page_t *c = &heap->bcache[k];
    size_t idle = heap->bcache_low[k];
    for (size_t i = 0; i < idle && c->free; i++) {
      mth_block_t *b = mth_bcache_take(c);
      mth_page_give_back(heap, mth_page_of(mth_segment_of(b), b), b);
    }
    mth_bcache_shrink(heap, c);
    mth_bcache_retrip(c);
    size_t n = mth_bcache_count(c);
    heap->bcache_low[k] = (uint8_t)n;
    held += n;
  }
  mth_lcache_scavenge(heap, false);
  held += heap->lcache_n;
  heap->bcache_scavenge_ms = held ? now + MTH_BCACHE_SCAVENGE_MS : 0;
}

void mth_bcache_flush(mth_heap_t *heap) {
  for (size_t k = 0; mth_bcache_next(heap, &k); k++) {
    mth_page_t *c = &heap->bcache[k];
    while (c->free) {
      mth_block_t *b = mth_bcache_take(c);
      mth_page_give_back(heap, mth_page_of(mth_segment_of(b), b), b);
    }
    mth_bcache_shrink(heap, c);
    mth_bcache_retrip(c);
    heap->bcache_low[k] = 0;
  }
  mth_lcache_scavenge(heap, true);
  heap->bcache_scavenge_ms = 0;
}
