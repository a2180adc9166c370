/* mtheap internals: the types every part of the allocator shares.
 *
 * Memory layout
 *   region   1 GiB-aligned address space reserved once with MAP_NORESERVE (arena.c); divided
 *            into 2 MiB slots.  Regions are never unmapped: that keeps mmap/munmap out of the
 *            steady state, and it keeps every pointer we ever handed out inside mapped memory.
 *   segment  one or more slots starting with a header (mth_segment_t).  A "span" segment is
 *            owned by one heap and cut into 64 slices of 32 KiB (slice 0 is the header); a
 *            "huge" segment holds one block and belongs to no heap.
 *   page     a run of slices (a span) holding blocks of one size class, or one large block.
 *            Its descriptor is pages[first slice]; the other slices of the span point back to
 *            it with slice_offset, so any interior pointer finds its page in O(1).  Block k
 *            starts k * mth_bin_stride(class) bytes into the span: packed below 16 KiB, each
 *            on a slice of its own from there (MTH_SPREAD_MIN).
 *   heap     per-thread; owns span segments.  Only the owner touches its pages' free lists;
 *            other threads put freed blocks in heap->inbox (inbox.c) with one atomic.  A heap
 *            about to touch fresh memory may take a span from another heap's resident free
 *            slices (lend.c): the span is its own (page->home), the slices stay the segment's
 *            heap's.
 *
 * Invariants (checked where noted)
 *   - mth_segmap[s] != 0  <=>  a live segment header starts at slot s.
 *     A pointer whose slot bit is clear is not a span block (free() then looks it up slowly).
 *   - page->owner == heap  <=>  heap owns the page and its free fast path may push onto
 *     page->list: page->flags == 0 (an ordinary in-use span page, not full, with no aligned
 *     blocks; list is the page itself), or page->flags == MTH_PAGE_FULL and its frees go to
 *     its class's block cache (bcache.c: a class above 8 KiB, or any class while the heap is
 *     large, heap->lifo, when the page filled; list is the cache, set up by then).  Every other
 *     state (free slice, header slice, aligned, any other full page) has owner NULL, so the
 *     free fast path needs one comparison, and pushes without asking which list it is.
 *   - a page of several slices (not a large span: its one block starts in its first slice)
 *     has a copy of its owner tag and its list in each later slice's descriptor, written with
 *     the tag (mth_page_set_flags): free's fast path reads the descriptor of its block's own
 *     slice, owner and list on one line.  Every other descriptor but a span's first has owner
 *     NULL: a later slice of a large span, a free or never-used slice, and in a huge segment
 *     the slice its block starts in (segment.c).
 *   - page->used counts blocks handed out and not yet freed *locally*; remote frees count as
 *     used until the owner drains its inbox.
 *   - a block is in exactly one place: page->free, a slot of heap->inbox, heap->remote (the
 *     inbox's overflow list), heap->held (remote frees a drain for an absent owner left to it,
 *     inbox.c), a heap's block cache (heap->bcache[], bcache.c), or none (live).
 *   - a segment's slices (masks, descriptors of free slices, lists, purge times) change only
 *     under its heap's lock; a page's blocks, list and counts are its home heap's (page->home,
 *     which differs from seg->heap only for a borrowed span).
 *   - a page with MTH_PAGE_FULL set is changed only under its heap's lock (mth_heap_enter), by
 *     its owner's slow paths or by a thread freeing into it for an absent owner (inbox.c); the
 *     owner's fast paths only read its owner tag and list, to send a block to the class's
 *     cache, whose blocks still count in their pages' used, so no other thread's free can
 *     empty the page under it.  A large span is its one block's: the owner's free fast path
 *     touches it only to free that block, which no other thread is freeing at the same time
 *     (that would be a double free).
 *   - 0 < page->credit <= MTH_HEARTBEAT (a block cache's: MTH_BCACHE_BEAT); beat - credit
 *     mallocs of the page are not yet counted in heap->st_mallocs.
 */
#ifndef MTH_INTERNAL_H
#define MTH_INTERNAL_H

#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mtheap.h"

#define MTH_LIKELY(x) __builtin_expect(!!(x), 1)
#define MTH_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MTH_INLINE static inline __attribute__((always_inline))
#define MTH_NOINLINE __attribute__((noinline))
#define MTH_HIDDEN __attribute__((visibility("hidden")))
#define MTH_CACHE_LINE 64

/* Writes to fields that other threads read only for statistics (page->used, credit, the
 * heap's counters, ...).  The owner is the only writer; a statistics snapshot may read a stale
 * value.  Aligned stores are atomic on x86-64, so plain writes are what the fast path uses; in
 * the ThreadSanitizer build they are relaxed atomic stores, so the checker verifies everything
 * else without reporting this one intended race. */
#if defined(__SANITIZE_THREAD__)
#define MTH_RACY_SET(lv, v) __atomic_store_n(&(lv), (v), __ATOMIC_RELAXED)
#define MTH_RACY_GET(lv) __atomic_load_n(&(lv), __ATOMIC_RELAXED)
#else
#define MTH_RACY_SET(lv, v) ((lv) = (v))
#define MTH_RACY_GET(lv) (lv)
#endif
#define MTH_RACY_ADD(lv, d) MTH_RACY_SET(lv, (lv) + (d))

/* ---- geometry ---- */
/* Slices of 32 KiB: a heap's page of a small class is one or two slices, and every heap has
 * about one page per class it uses, so a program of many threads holds threads x classes
 * pages (mstress -t 8, 9 heaps and ~25 classes: 254 pages of 64 KiB, 16 MiB resident for
 * 3.5 MiB of live blocks; with 32 KiB slices peak RSS 61 -> 42.5 MiB).  16 KiB slices would
 * halve that again, but with 64 slices a segment of 1 MiB, blocks from 512 KiB up would get
 * runs of their own: realloc -t 2 ran 3x slower through mremap. */
#define MTH_SLICE_SHIFT 15
#define MTH_SLICE_SIZE ((size_t)1 << MTH_SLICE_SHIFT)       /* 32 KiB */
#define MTH_SEG_SHIFT 21
#define MTH_SEG_SIZE ((size_t)1 << MTH_SEG_SHIFT)           /* 2 MiB */
#define MTH_SEG_MASK (MTH_SEG_SIZE - 1)
#define MTH_SLICES (MTH_SEG_SIZE / MTH_SLICE_SIZE)          /* 64 */
#define MTH_REGION_SHIFT 30
#define MTH_REGION_SIZE ((size_t)1 << MTH_REGION_SHIFT)     /* 1 GiB */
/* user addresses: below 2^47 on x86-64 (the kernel returns higher ones only to a hint above
 * that); 48 bits elsewhere (arm64) */
#if defined(__x86_64__)
#define MTH_ADDR_BITS 47
#else
#define MTH_ADDR_BITS 48
#endif

/* ---- size classes: 16-byte steps to 128, then 8 classes per doubling (<= 12.5% apart) ---- */
#define MTH_SMALL_MAX 4096                   /* sizes the direct table maps in 16-byte steps */
#define MTH_CLASS_MAX ((size_t)128 << 10)    /* largest size class; above: large spans */
/* heap->direct[]: size -> the first page of its class, for every size up to MTH_CLASS_MAX:
 * one entry per 16 bytes up to MTH_SMALL_MAX, then one per 512 (the classes above 4 KiB are
 * multiples of 512, so every size in a 512-byte step has the same class). */
#define MTH_DIRECT_SMALL (MTH_SMALL_MAX / 16 + 1)
#define MTH_DIRECT_N (MTH_DIRECT_SMALL + (MTH_CLASS_MAX - MTH_SMALL_MAX) / 512)
#define MTH_BINS 89                          /* classes 1..88; 0 unused */
#define MTH_BIN_LARGE 0                      /* bin of a single-block large span */
#define MTH_LARGE_MAX ((size_t)32 << MTH_SLICE_SHIFT)   /* 1 MiB: larger blocks get their own runs */
#define MTH_RETAIN_MAX ((size_t)8 << 10)     /* empty pages kept per bin up to this block size */
#define MTH_SMALL_PAGE_MAX ((size_t)64 << 10) /* longest page of a class up to MTH_RETAIN_MAX */
#define MTH_RETIRED_MAX 32                   /* further empty pages a heap keeps for a while, */
#define MTH_RETIRED_SLICES ((2u << 20) >> MTH_SLICE_SHIFT)  /* ... holding at most 2 MiB of slices, */
#define MTH_RETIRED_TICKS 1024               /* ... for at most this many slow-path ticks */
#define MTH_BCACHE_BIN0 1                    /* every class has a block cache descriptor, */
#define MTH_BCACHE_BIG 57                    /* ... used always from here (9 KiB, above MTH_RETAIN_MAX), */
#define MTH_LIFO_BYTES ((size_t)1 << 20)     /* ... below only while a heap's blocks of them exceed this (bcache.c) */
#define MTH_BCACHE_BINS (MTH_BINS - MTH_BCACHE_BIN0)
#define MTH_BCACHE_DEPTH 255                 /* blocks a class's cache may hold (uint8), and bytes: */
#define MTH_BCACHE_CLASS_BYTES ((size_t)2 << 20)   /* 32 classes: 64 MiB a heap (bcache.c) */
#define MTH_BCACHE_SMALL_BYTES ((size_t)64 << 10)   /* a class below MTH_BCACHE_BIG: 3.0 MiB a heap */
#define MTH_BCACHE_EXTRA_BYTES ((size_t)8 << 20)   /* past those, lent to busy classes: a heap's in all */
/* A freed huge block's slots stay resident for the next huge malloc at most this long (the
 * purge delay applies to everything else): a program whose big tables are rebuilt and dropped
 * (ruby's hashes: docs/PERFORMANCE.md) needs that memory elsewhere soon, while a loop of huge
 * mallocs and frees (bench `large`, `mmap-lock`) reuses a slot within microseconds. */
#define MTH_HUGE_KEEP_MS 100
#define MTH_ABSENT_MS 10                     /* an owner with no slow path this long is away (heap.c) */
#define MTH_ABSENT_RETURNS 1                 /* after coming back this often, an owner's slices wait the delay */
#define MTH_LCACHE_MAX 1                     /* freed large spans a heap keeps for reuse (page.c), */
#define MTH_LCACHE_SLICES ((1u << 20) >> MTH_SLICE_SHIFT)   /* ... holding at most 1 MiB */
/* A cache's pops between two ticks.  16, not 64, since a class's cache is set up when its first
 * page fills and takes every free into a full page on the fast path from then on: the slow
 * path's frees, whose every 16th ran the tick, are gone, and a thread that cycles blocks
 * through its caches must still take in its remote frees and purge (test_purge remote: a
 * gigabyte freed by another thread was back in 2.9 s with 64, 1.6 with 16, 1.4 before;
 * hotpath's 16 KiB batch row 59.4 -> 63.2 instructions). */
#define MTH_BCACHE_BEAT 16
#define MTH_HEARTBEAT 4096                   /* mallocs from one page between two slow-path ticks */
#define MTH_OVF_AHEAD 8                      /* overflow list: the drain prefetches this far ahead */
#define MTH_DRAIN_CHUNK 256                  /* blocks a drain for an absent owner frees per lock hold */
#define MTH_INBOX_SLOTS 1024                 /* remote frees a heap takes before its overflow list
                                                (xmalloc: 256 slots overflowed on half the frees) */
#define MTH_MAX_ALLOC ((size_t)1 << 46)      /* larger requests fail with ENOMEM */

MTH_INLINE size_t mth_bin_of(size_t size) {
  if (size <= 128) return size <= 16 ? 1 : (size + 15) >> 4;
  size_t w = size - 1;
  unsigned b = 63 - (unsigned)__builtin_clzl(w);     /* >= 7 */
  return 9 + (size_t)(b - 7) * 8 + ((w >> (b - 3)) & 7);
}

/* Precondition: size <= MTH_CLASS_MAX. */
MTH_INLINE size_t mth_direct_index(size_t size) {
  if (size <= MTH_SMALL_MAX) return (size + 15) >> 4;
  return MTH_DIRECT_SMALL + ((size - MTH_SMALL_MAX - 1) >> 9);
}

MTH_INLINE size_t mth_bin_size(size_t bin) {
  if (bin <= 8) return bin * 16;
  size_t c = bin - 9;
  return (size_t)(8 + (c & 7) + 1) << (7 + c / 8 - 3);
}

/* Where a class's blocks start in its page: one after another (stride == size), except from
 * MTH_SPREAD_MIN up, where each block starts a run of whole slices of its own (a "slot"; the
 * bytes between its end and the next slot are no block's).  Why: a program that writes only
 * the first bytes of big buffers (sized for the worst case) makes resident only the OS pages
 * where blocks start.  Packed, a 20 KiB block may start at any 4 KiB page of a slice, so as
 * spans of different classes come and go over the same slices, ever more pages become some
 * block's start: peak RSS of `window -t 1 -m 65536 --head` grew 18.1 -> 29.0 -> 67.5 MiB over
 * 0.5, 6 and 150 M replacements (tcmalloc 18.5 -> 20.0 -> 21.5).  Spread, every block starts
 * on a slice, so at most one OS page in eight is ever a block's start: 15.0 -> 19.7 -> 28.1
 * MiB, and at 4 and 8 threads 92.5 and 178 MiB instead of 213 and 365 (tcmalloc 97 and 275).
 * The price is in programs that write their big blocks whole: blocks no longer share OS pages
 * and spans are longer, so over time more of them gets touched (`window -m 65536`: peak RSS
 * +11-13% in the full mode, docs/PERFORMANCE.md).  Spreading from 9 KiB up also cost `xfree`, whose blocks stop at 16000 bytes, 13%
 * more.  No colouring: the slots' starts all share an L1 set, and `window --head` measured no
 * slower than with packed blocks (7 interleaved runs at 1 and 8 threads).  The slots start on slices, so a class that is a
 * multiple of an alignment up to a slice stays aligned to it (mth_malloc_aligned relies on
 * that). */
#define MTH_SPREAD_MIN ((size_t)16 << 10)
/* The distance between two blocks' starts in a page of class bin. */
MTH_INLINE size_t mth_bin_stride(size_t bin) {
  size_t bs = mth_bin_size(bin);
  return bs < MTH_SPREAD_MIN ? bs : (bs + MTH_SLICE_SIZE - 1) & ~(MTH_SLICE_SIZE - 1);
}

/* Bits set in x.  The baseline x86-64 has no popcnt instruction, and there
 * __builtin_popcountll is a call into libgcc (__popcountdi2: 13 M instructions of `xfree -t
 * 4`'s span searches under callgrind); the bit-slicing sum is a dozen instructions inline. */
MTH_INLINE int mth_popcount64(uint64_t x) {
#ifdef __POPCNT__
  return __builtin_popcountll(x);
#else
  x = x - ((x >> 1) & 0x5555555555555555ull);
  x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
  x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (int)((x * 0x0101010101010101ull) >> 56);
#endif
}

/* ---- blocks, pages, segments ---- */
typedef struct mth_block_s { struct mth_block_s *next; } mth_block_t;
typedef struct mth_heap_s mth_heap_t;

enum {
  MTH_PAGE_FULL = 1u << 0,      /* no free block: off its bin queue, in no list */
  MTH_PAGE_ALIGNED = 1u << 1,   /* holds blocks returned at an offset (memalign) */
  MTH_PAGE_UNUSED = 1u << 2,    /* free slice */
  MTH_PAGE_META = 1u << 3,      /* header slice of a segment */
};

typedef struct mth_page_s {
  /* Line 0: the owner's, written on every malloc and free; no other thread touches it. */
  mth_block_t *free;          /* the free blocks: malloc pops, the owner's free pushes (LIFO) */
  struct mth_page_s *next, *prev;   /* bin queue; NULL when full */
  uint32_t used;              /* blocks out (see invariants) */
  int32_t credit;             /* mallocs left before this page sends one to the tick (alloc.h) */
  uint16_t capacity;          /* blocks carved so far (lazily: a list's worth at a time, page.c);
                                 a block cache's cap (bcache.c) */
  uint8_t retired;            /* empty, kept for reuse, and listed in heap->retired[] */
  uint32_t trip;              /* a block cache's: the count of blocks at which a free calls out
                                 (bcache.c); its used is trip minus the blocks it holds */
  /* Line 1: what a free from any thread reads to find and check the block; written only when
   * the span is formatted or retired.  On its own line so that other threads' frees leave it
   * shared in every cache and never steal line 0 from the owner mid-malloc (one line for
   * both cost xmalloc a cache miss per allocation on the owner's page->used++). */
  _Alignas(MTH_CACHE_LINE) mth_heap_t *owner;  /* the owning heap while its free fast path
                                 may push onto list, else NULL: that path's single test */
  uint32_t flags;
  uint32_t block_size;
  uint16_t reserved;          /* blocks that fit in the span (<= 64 KiB / 16) */
  uint16_t slice_offset;      /* bytes from this descriptor back to the span's first one */
  uint8_t bin;
  uint8_t slice_count;        /* span length in slices */
  struct mth_page_s *list;    /* where the owner's free pushes a block of this slice: the
                                 span's page, or for a full page of a cached class the class's
                                 block cache; read only where owner named the freeing heap */
  /* the heap the page belongs to: its blocks' remote frees go to this heap's inbox.  Usually
   * its segment's heap; a span taken from another heap's free slices (lend.c) belongs to the
   * heap that took it, while its slices stay the segment's. */
  mth_heap_t *home;
} mth_page_t;

MTH_INLINE uint32_t mth_page_flags(const mth_page_t *page) { return __atomic_load_n(&page->flags, __ATOMIC_RELAXED); }

/* A descriptor that describes no span: a free slice (MTH_PAGE_UNUSED), the header
 * (MTH_PAGE_META), or a slice no span has used since its segment was made -- all zeros, which
 * its block_size of 0 tells (every page and large block has one).  So a new segment writes
 * none of its 64 descriptors: 8 KiB, two resident pages more per segment and so per thread
 * (bench/tools/thread_footprint 64 64: 40.9 -> 32.9 KiB per thread). */
MTH_INLINE bool mth_page_unused(const mth_page_t *page, uint32_t flags) {
  return (flags & (MTH_PAGE_UNUSED | MTH_PAGE_META)) || MTH_RACY_GET(page->block_size) == 0;
}

#define MTH_PAGE_DESC_SHIFT 7   /* descriptors are 128 bytes: two cache lines */
_Static_assert(sizeof(mth_page_t) == ((size_t)1 << MTH_PAGE_DESC_SHIFT), "page descriptors are indexed by shift");

enum { MTH_SEG_SPANS = 1, MTH_SEG_HUGE = 2 };

typedef struct mth_segment_s {
  uintptr_t cookie;           /* address ^ mth_secret: a foreign pointer fails this check */
  mth_heap_t *heap;           /* owner of a span segment; NULL for huge */
  uint32_t kind;
  uint32_t nslots;            /* huge: 2 MiB slots in the run */
  uint64_t used_mask;         /* slices in use; bit 0 (header) always set */
  uint64_t dirty_mask;        /* free slices that may be resident; free & ~dirty is zeroed */
  uint64_t purge_at_ms;       /* 0, or when dirty slices become due for purging */
  struct mth_segment_s *next, *prev;  /* heap's segs_avail / segs_full list */
  uint8_t *huge_block;        /* huge: the block */
  size_t huge_size;           /* huge: usable bytes from huge_block: the request rounded up to
                                 an OS page, within the run (mth_huge_usable) */
  bool on_full_list;
  /* span_of[k]: where in pages[] the descriptor of the span slice k belongs to starts, in
   * bytes: (first slice of the span) << MTH_PAGE_DESC_SHIFT (k's own for a span's first slice,
   * a free slice and the header; 0, the header, in a huge segment).  What the slow paths read
   * to find a block's page: two lines per segment that stay in cache.  Free's fast path reads
   * the slice's own descriptor instead (its owner copy and span, one line), which replaces
   * the page's owner line rather than adding one (when the fast path read slice_offset there
   * and then the page's owner, that was a miss of its own for every block beyond a span's
   * first slice: perf, `window -m 65536`).  Bytes, not a slice index: the shift would be one
   * more instruction. */
  _Alignas(MTH_CACHE_LINE) uint16_t span_of[MTH_SLICES];
  _Alignas(MTH_CACHE_LINE) mth_page_t pages[MTH_SLICES];
} mth_segment_t;

_Static_assert(offsetof(mth_segment_t, pages) % MTH_CACHE_LINE == 0, "pages on cache lines");
_Static_assert(sizeof(mth_segment_t) <= MTH_SLICE_SIZE, "header fits in slice 0");

/* ---- heaps ---- */
typedef struct { mth_page_t *first; } mth_queue_t;   /* doubly linked through the pages */

typedef struct {
  uint64_t mallocs;           /* flushed from pages */
  uint64_t frees_remote_in;   /* not used per bin yet */
} mth_bin_stats_t;

struct mth_heap_s {
  /* owner-only, hot */
  mth_page_t *direct[MTH_DIRECT_N];   /* mth_direct_index(size) -> first page of its class */
  mth_queue_t bins[MTH_BINS];
  mth_segment_t *segs_avail, *segs_full;
  uint32_t empty_segs;        /* span segments with only the header in use (cache of one) */
  uint32_t ticks;             /* slow-path events; every so often, look at the clock */
  /* bytes of blocks carved in pages of classes below MTH_BCACHE_BIG, and whether they are more
   * than MTH_LIFO_BYTES: then those classes' full pages send their frees to the block caches
   * too (bcache.c) */
  size_t small_bytes;
  bool lifo;
  /* free slices of this heap's segments that may be resident (its part of
   * mth_gstats.idle_slices): other heaps read it to find slices to borrow (lend.c) */
  uint32_t idle_slices;
  uint32_t borrow_skip;       /* span allocations before the next look for slices to borrow */
  /* The heap's lock (mth_heap_enter): 1 while the owner is on a slow path or another thread
   * frees into the heap for it (inbox.c), 2 while that thread holds it and the owner waits;
   * lock_depth counts the owner's nested entries. */
  _Atomic int lock;
  uint32_t lock_depth;
  /* Empty pages kept in their bin queues for reuse (FIFO; see page.c): a program that frees a
   * batch of blocks and allocates the next one reuses the pages instead of cycling them through
   * the segment.  Bounded: MTH_RETIRED_MAX pages of MTH_RETIRED_SLICES slices in all, each
   * for at most MTH_RETIRED_TICKS ticks. */
  mth_page_t *retired[MTH_RETIRED_MAX];
  uint32_t retired_tick[MTH_RETIRED_MAX];
  uint32_t retired_head, retired_n, retired_slices;
  uint64_t purge_next_ms;     /* earliest purge_at of our segments, 0 = none */
  /* Frees for an absent owner (inbox.c, segment.c: mth_span_free_now), under the heap's lock:
   * absent_purged says slices emptied for it went to the OS at once since its last due tick,
   * absent_returns how often it came back after that (saturating; both reset when a new
   * thread adopts the heap). */
  uint8_t absent_purged, absent_returns;
  uint8_t bcache_low[MTH_BCACHE_BINS];    /* fewest it held since the last scavenge */
  uint64_t bcache_set[(MTH_BCACHE_BINS + 63) / 64];   /* caches set up: what scavenge and flush visit */
  uint64_t bcache_scavenge_ms;            /* next scavenge, 0 = no block cached */
  size_t bcache_extra;                    /* bytes of caps lent past MTH_BCACHE_CLASS_BYTES */
  /* Large spans freed and kept for the next large malloc (page.c), the latest last; the
   * scavenge gives back those that stayed a whole interval (lcache_low: fewest since). */
  mth_page_t *lcache[MTH_LCACHE_MAX];
  uint32_t lcache_n, lcache_low, lcache_slices;
  uint32_t slow_frees;                    /* the owner's frees into full pages on the slow path
                                             (uncached classes, caches full): every 16th ticks */
  /* statistics (owner writes, readers tolerate tearing) */
  uint64_t st_mallocs[MTH_BINS];
  uint64_t st_large, st_huge, st_remote_out, st_realloc_inplace, st_realloc_mremap;
  uint64_t st_inbox_overflow, st_inbox_drains, st_span_ops, st_segment_ops;
  uint64_t st_borrows;        /* spans taken from other heaps' free slices (lend.c), */
  uint64_t st_lent_late;      /* ... given back through the lender's spans_back, */
  uint64_t st_lend_rmw;       /* ... and the atomic read-modify-writes that took (locks tried) */
  uint64_t st_proxy_frees;    /* remote frees this thread made into an absent owner's pages */
  uint64_t st_proxy_yields;   /* drains for this (absent) heap cut short: its owner came back */
  uint64_t st_remote_in;      /* remote frees taken out of this heap's inbox (by whoever holds its
                                 lock): what other threads' st_remote_out counts, less those waiting */
  /* bookkeeping */
  mth_heap_t *all_next;       /* every heap ever made: they are recycled, never freed */
  mth_heap_t *abandoned_next;
  int tid;
  _Atomic int state;          /* MTH_HEAP_LIVE / MTH_HEAP_ABANDONED */
  uint32_t inbox_read;        /* owner's cursor into inbox[] (inbox.c) */
  mth_block_t *held;          /* remote frees a drain for the owner left to it (inbox.c) */
  mth_block_t *backlog;       /* the rest of an overflow list a drain for the owner took (inbox.c) */
  mth_block_t *handed;        /* held's one block, moved there from backlog (mth_inbox_hand_over) */
  /* this heap's thread as a freer: its last MTH_OVF_AHEAD blocks pushed on the overflow list
   * of ovf_owner, each newly pushed block pointing at the one this many pushes back (inbox.c) */
  uint32_t ovf_i;
  mth_heap_t *ovf_owner;
  mth_block_t *ovf_ring[MTH_OVF_AHEAD];
  /* written by other threads: keep off the owner's lines (inbox.c) */
  _Alignas(MTH_CACHE_LINE) _Atomic uint64_t inbox_n;   /* slots claimed since the last reset */
  _Atomic(mth_block_t *) remote;                      /* overflow list: inbox[] was full */
  _Atomic uint32_t help_ticks;  /* the owner's ticks when another thread first saw them, */
  _Atomic uint64_t help_ms;     /* ... and when (mth_heap_absent) */
  /* spans other heaps took from this heap's segments and have emptied, waiting for this heap
   * to take their slices back (lend.c: its lock was busy when they emptied); linked through
   * page->next */
  _Atomic(mth_page_t *) spans_back;
  /* Block caches (bcache.c): per class, blocks freed into full pages, as the free list of a
   * descriptor no segment holds, which direct[] names from the time the class's front page
   * runs dry until the cache does.  All zeros (a cache that takes nothing) until the class's
   * first free into a full page sets it up (mth_bcache_setup; bcache_set says which are).
   * Here, past the fields every thread uses and before the inbox, with heaps page-aligned
   * (heap.c): a thread that frees into no full page and gets no remote frees keeps its heap
   * to two resident pages (tests/test_pages.c footprint). */
  _Alignas(MTH_CACHE_LINE) mth_page_t bcache[MTH_BCACHE_BINS];
  _Alignas(MTH_CACHE_LINE) _Atomic(mth_block_t *) inbox[MTH_INBOX_SLOTS];
  _Alignas(MTH_CACHE_LINE) char tail_pad_[0];
};

enum { MTH_HEAP_LIVE = 1, MTH_HEAP_ABANDONED = 2 };

/* Whether bin's cache was ever set up: asked before its descriptor is read, so a class that
 * never needed a cache leaves the heap's pages of descriptors untouched (not even read: a
 * read of a fresh page is a page fault too). */
MTH_INLINE bool mth_bcache_used(const mth_heap_t *heap, size_t bin) {
  size_t k = bin - MTH_BCACHE_BIN0;
  return (heap->bcache_set[k / 64] >> (k % 64)) & 1;
}
/* The block cache of bin (>= MTH_BCACHE_BIN0): the array's offset and the bin's bias folded
 * into one constant, so the address is a shift and an add. */
MTH_INLINE mth_page_t *mth_bcache_of(mth_heap_t *heap, size_t bin) {
  return (mth_page_t *)((uintptr_t)heap + offsetof(mth_heap_t, bcache) -
                        MTH_BCACHE_BIN0 * sizeof(mth_page_t) + (bin << MTH_PAGE_DESC_SHIFT));
}

MTH_HIDDEN bool mth_bcache_setup(mth_heap_t *heap, mth_page_t *c);   /* bcache.c */

/* Keep page->owner and page->list in step with page->flags (and page->bin, set before any flags). */
/* Other threads read both fields (a remote free checks them): relaxed atomics, which cost
 * nothing on x86 but keep the race benign in the C memory model and quiet under TSan. */
MTH_INLINE void mth_page_set_flags(mth_page_t *page, uint32_t flags, mth_heap_t *heap) {
  mth_heap_t *owner = NULL;
  mth_page_t *list = page;
  if (flags == 0) {
    owner = heap;
  } else if (flags == MTH_PAGE_FULL && heap && (page->bin >= MTH_BCACHE_BIG || heap->lifo)) {
    /* the class's cache, set up when its first page fills (its frees would otherwise find
     * none); with caches off (a cap of 0) the frees take the slow path */
    mth_page_t *c = mth_bcache_of(heap, page->bin);
    if (mth_bcache_used(heap, page->bin) ? c->capacity != 0 : mth_bcache_setup(heap, c)) {
      owner = heap;
      list = c;
    }
  }
  /* list is written only with an owner, and only by the owner's thread (a thread freeing for
   * an absent owner only ever clears the tag, mth_page_free_for): the owner's fast path never
   * reads a list another thread is changing, and a stale tag it read still names a list its
   * block may go to */
  __atomic_store_n(&page->flags, flags, __ATOMIC_RELAXED);
  if (owner) page->list = list;
  __atomic_store_n(&page->owner, owner, __ATOMIC_RELAXED);
  /* the tag's copies in the page's other slices (free's fast path reads its block's slice) */
  if (MTH_UNLIKELY(page->slice_count > 1) && page->bin != MTH_BIN_LARGE)
    for (size_t k = 1; k < page->slice_count; k++) {
      if (owner) page[k].list = list;
      __atomic_store_n(&page[k].owner, owner, __ATOMIC_RELAXED);
    }
}

/* ---- globals ---- */
extern MTH_HIDDEN uintptr_t mth_secret;
extern MTH_HIDDEN uint8_t mth_segmap[];            /* byte per 2 MiB slot: live segment header */
extern MTH_HIDDEN mth_page_t mth_page_empty;       /* free == NULL: sends malloc to slow path */
/* TLS value of a thread with no heap yet: a heap whose direct table names mth_page_empty for
 * every size (so malloc's fast path falls to the slow path) and that has no other field -- it
 * is that table alone (heap.c), which works because direct[] is the heap's first member. */
extern MTH_HIDDEN _Alignas(mth_heap_t) mth_page_t *const mth_heap_empty_direct[MTH_DIRECT_N];
#define mth_heap_empty (*(mth_heap_t *)(uintptr_t)mth_heap_empty_direct)
extern MTH_HIDDEN __thread mth_heap_t *mth_tls_heap __attribute__((tls_model("initial-exec")));

/* ---- options (options.c) ---- */
typedef struct {
  long purge_delay_ms;        /* <0: never purge on our own; 0: at once */
  bool stats_at_exit;
  bool verbose;
  bool thp;                   /* allow transparent huge pages in our regions */
  bool abort_on_invalid;      /* invalid free: abort (default) or report and ignore */
  bool bcache;                /* block caches (bcache.c) */
  size_t region_size;         /* address space reserved per region */
} mth_options_t;
extern MTH_HIDDEN mth_options_t mth_opt;
MTH_HIDDEN void mth_options_init(void);
MTH_HIDDEN void mth_message(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
MTH_HIDDEN void mth_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* ---- os (os.c) ---- */
typedef struct {
  _Atomic uint64_t mmap_calls, munmap_calls, madvise_calls, mremap_calls;
  _Atomic uint64_t reserved, purged, committed;
  _Atomic uint64_t lock_acquires, lock_waits, lock_wait_ns;
  _Atomic uint64_t threads_seen, threads_live, heaps_reused;
  _Atomic uint64_t pages_in_use, pages_peak;
  _Atomic uint64_t idle_slices;   /* free slices of all span segments that may be resident */
} mth_global_stats_t;
extern MTH_HIDDEN mth_global_stats_t mth_gstats;
MTH_HIDDEN void *mth_os_reserve(size_t size, size_t align);
MTH_HIDDEN void mth_os_purge(void *p, size_t size);
MTH_HIDDEN bool mth_os_remap_fixed(void *old, size_t old_size, void *new_addr, size_t new_size);
MTH_HIDDEN void mth_os_rereserve(void *p, size_t size);
MTH_HIDDEN uint64_t mth_clock_ms(void);   /* clock.c: CLOCK_MONOTONIC_COARSE, from the vDSO */
MTH_HIDDEN uint64_t mth_clock_ns(void);   /* CLOCK_MONOTONIC */
MTH_HIDDEN size_t mth_os_resident(void);
MTH_HIDDEN void *mth_meta_alloc(size_t size);   /* zeroed, never freed: heaps, regions */
MTH_HIDDEN void *mth_meta_alloc_pages(size_t size);   /* the same, 4 KiB-aligned */

/* ---- locks (lock.c): futex mutex that counts its waits ---- */
typedef struct { _Atomic int state; } mth_lock_t;
MTH_HIDDEN void mth_lock_slow(mth_lock_t *l);
MTH_HIDDEN void mth_unlock_slow(mth_lock_t *l);
MTH_INLINE void mth_lock(mth_lock_t *l) {
  int z = 0;
  atomic_fetch_add_explicit(&mth_gstats.lock_acquires, 1, memory_order_relaxed);
  if (MTH_LIKELY(atomic_compare_exchange_strong_explicit(&l->state, &z, 1, memory_order_acquire,
                                                         memory_order_relaxed)))
    return;
  mth_lock_slow(l);
}
MTH_INLINE void mth_unlock(mth_lock_t *l) {
  if (MTH_UNLIKELY(atomic_exchange_explicit(&l->state, 0, memory_order_release) == 2))
    mth_unlock_slow(l);
}
MTH_INLINE bool mth_trylock(mth_lock_t *l) {
  int z = 0;
  return atomic_compare_exchange_strong_explicit(&l->state, &z, 1, memory_order_acquire, memory_order_relaxed);
}
MTH_INLINE void mth_lock_reinit(mth_lock_t *l) { atomic_store(&l->state, 0); }

/* ---- arena (arena.c) ---- */
MTH_HIDDEN mth_segment_t *mth_arena_alloc(size_t nslots, size_t align, size_t lead, bool *is_zero);
MTH_HIDDEN void mth_arena_free(void *start, size_t nslots, bool clean);
MTH_HIDDEN void mth_arena_free_keep(void *start, size_t nslots, bool clean, long keep_ms);
MTH_HIDDEN bool mth_arena_try_extend(void *start, size_t nslots, size_t new_nslots);
MTH_HIDDEN void *mth_arena_find_head(const void *p);
MTH_HIDDEN void mth_arena_purge(bool force);
MTH_HIDDEN bool mth_arena_contains(const void *p);
MTH_HIDDEN void mth_arena_fork_prepare(void);
MTH_HIDDEN void mth_arena_fork_parent(void);
MTH_HIDDEN void mth_arena_fork_child(void);
MTH_HIDDEN void mth_arena_stats(size_t *reserved, size_t *committed, size_t *unpurged);
typedef void (*mth_segment_visit_fn)(mth_segment_t *seg, void *arg);
MTH_HIDDEN void mth_arena_visit(mth_segment_visit_fn fn, void *arg);

/* A byte per slot (64 MiB of .bss for a 47-bit address space, untouched but where segments
 * live): one load and compare on the free fast path, and set or cleared with a plain store. */
#define MTH_SEGMAP_SLOTS ((size_t)1 << (MTH_ADDR_BITS - MTH_SEG_SHIFT))
MTH_INLINE void mth_segmap_set(const void *seg, bool on) {
  __atomic_store_n(&mth_segmap[(uintptr_t)seg >> MTH_SEG_SHIFT], on, __ATOMIC_RELEASE);
}
/* For the free fast path: no range check.  An address from 2^MTH_ADDR_BITS up (on x86-64
 * only with 5-level paging and an mmap hint that high) aliases a lower slot; every other
 * foreign pointer reads a clear byte.  A plain read
 * (one compare with memory): a byte is written only when its segment is made or given back. */
MTH_INLINE bool mth_segmap_test_fast(uintptr_t a) {
  return MTH_RACY_GET(mth_segmap[(a >> MTH_SEG_SHIFT) & (MTH_SEGMAP_SLOTS - 1)]) != 0;
}
MTH_INLINE bool mth_segmap_test(const void *p) {
  uintptr_t s = (uintptr_t)p >> MTH_SEG_SHIFT;
  if (MTH_UNLIKELY(s >= MTH_SEGMAP_SLOTS)) return false;
  return __atomic_load_n(&mth_segmap[s], __ATOMIC_RELAXED) != 0;
}

/* ---- segments and spans (segment.c) ---- */
MTH_INLINE mth_segment_t *mth_segment_of(const void *p) {
  return (mth_segment_t *)((uintptr_t)p & ~(uintptr_t)MTH_SEG_MASK);
}
MTH_INLINE mth_page_t *mth_page_of(mth_segment_t *seg, const void *p) {
  size_t idx = ((uintptr_t)p - (uintptr_t)seg) >> MTH_SLICE_SHIFT;
  mth_page_t *page = &seg->pages[idx];
  return (mth_page_t *)((uint8_t *)page - page->slice_offset);
}
/* span_of's entry for a slice of the span that starts at slice first (segment.c keeps it). */
MTH_INLINE uint16_t mth_span_of_slice(size_t first) { return (uint16_t)(first << MTH_PAGE_DESC_SHIFT); }
/* The same as mth_page_of through the segment's span_of map (free's fast path): the segment is
 * 2 MiB aligned, so the slice index is a bit field of the address. */
MTH_INLINE mth_page_t *mth_page_of_fast(mth_segment_t *seg, uintptr_t a) {
  size_t off = MTH_RACY_GET(seg->span_of[(a >> MTH_SLICE_SHIFT) & (MTH_SLICES - 1)]);
  return (mth_page_t *)((uint8_t *)seg->pages + off);
}
/* The descriptor of the slice holding address a, whatever it is: a span's first (the page), a
 * later slice of a span (its owner tag a copy of the page's, slice_offset the way back), a
 * free slice or the header. */
MTH_INLINE mth_page_t *mth_slice_of_fast(mth_segment_t *seg, uintptr_t a) {
  /* the slice index already scaled by the descriptor size: one shift and one mask */
  size_t off = (a >> (MTH_SLICE_SHIFT - MTH_PAGE_DESC_SHIFT)) & ((MTH_SLICES - 1) << MTH_PAGE_DESC_SHIFT);
  return (mth_page_t *)((uint8_t *)seg + off + offsetof(mth_segment_t, pages));
}
MTH_INLINE uint8_t *mth_page_start(const mth_page_t *page);
/* How far p is into its block (0: p starts one).  A large page holds one block at the span's
 * start, no shorter than the span: beyond block_size is no block at all (the caller checks). */
MTH_INLINE size_t mth_block_offset(const mth_page_t *page, const void *p) {
  size_t off = (size_t)((const uint8_t *)p - mth_page_start(page));
  return page->bin == MTH_BIN_LARGE ? off : off % mth_bin_stride(page->bin);
}
MTH_INLINE size_t mth_page_index(const mth_page_t *page) {
  return (size_t)(page - mth_segment_of(page)->pages);
}
MTH_INLINE uint8_t *mth_page_start(const mth_page_t *page) {
  return (uint8_t *)mth_segment_of(page) + (mth_page_index(page) << MTH_SLICE_SHIFT);
}
MTH_HIDDEN mth_page_t *mth_span_alloc(mth_heap_t *heap, size_t nslices, size_t room, bool *is_zero);
MTH_HIDDEN void mth_span_free(mth_heap_t *heap, mth_page_t *page);
MTH_HIDDEN void mth_span_free_now(mth_heap_t *heap, mth_page_t *page);
MTH_HIDDEN bool mth_span_resize(mth_heap_t *heap, mth_page_t *page, size_t size);
/* A large block's usable size: the request rounded up to an OS page, not the span's 32 KiB
 * slices.  realloc copies the usable bytes (the program may have written them all), so
 * slack there would be copied by every move of a growing block (with the room of
 * mth_page_alloc_growing, see page.c for the measurement). */
MTH_INLINE size_t mth_large_usable(size_t size) { return (size + 4095) & ~(size_t)4095; }
/* The same for a huge block: not the rest of its run of 2 MiB slots.  Programs that account
 * their heap with malloc_usable_size count what it says: ruby's GC, triggered by malloc'd
 * bytes, counted its 2.5-12 MiB hash tables 1.16-1.59x their size (a quarter more bytes in
 * all than asked, tcmalloc 1.01x) and collected 39 times where it did 35 under the others. */
MTH_INLINE size_t mth_huge_usable(size_t size, size_t room) {
  size_t u = mth_large_usable(size);
  return u < room ? u : room;
}
MTH_HIDDEN void mth_segments_purge(mth_heap_t *heap, uint64_t now, bool force);
MTH_HIDDEN void mth_segment_release_empty(mth_heap_t *heap);
MTH_INLINE uint64_t mth_run_bits(size_t idx, size_t n) {
  return (n >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1)) << idx;
}
/* The slice bookkeeping of a span segment, under its heap's lock (segment.c): claim marks
 * slices [idx, idx+n) used as part of the span starting at first; release frees them (false
 * when that emptied the segment and it went back to the arena). */
MTH_HIDDEN void mth_slices_claim(mth_heap_t *heap, mth_segment_t *seg, size_t first, size_t idx, size_t n,
                                 bool *is_zero);
MTH_HIDDEN bool mth_slices_release(mth_heap_t *heap, mth_segment_t *seg, size_t idx, size_t n);
typedef struct {
  mth_segment_t *seg;
  int idx, dirty, runlen;     /* window start, its resident slices, the length of its free run */
} mth_fit_t;
MTH_HIDDEN mth_fit_t mth_fit_heap(mth_heap_t *heap, size_t n, size_t *room);

/* ---- lending (lend.c): spans on other heaps' free slices ---- */
MTH_HIDDEN mth_page_t *mth_span_borrow(mth_heap_t *heap, size_t n, bool need);
MTH_HIDDEN void mth_span_give_back(mth_page_t *page);
MTH_HIDDEN void mth_spans_take_back(mth_heap_t *heap);
typedef enum { MTH_LENDER_BUSY, MTH_LENDER_TAKEN, MTH_LENDER_HELD } mth_lender_t;
MTH_HIDDEN mth_lender_t mth_lender_enter(mth_heap_t *owner);
MTH_HIDDEN void *mth_huge_alloc(mth_heap_t *heap, size_t size, size_t align, bool zero);
MTH_HIDDEN void mth_huge_free(mth_segment_t *seg);
MTH_HIDDEN void *mth_huge_realloc(mth_segment_t *seg, void *p, size_t size);
MTH_HIDDEN mth_segment_t *mth_huge_lookup(const void *p);
MTH_INLINE bool mth_segment_valid(const mth_segment_t *seg) {
  return __atomic_load_n(&seg->cookie, __ATOMIC_ACQUIRE) == ((uintptr_t)seg ^ mth_secret);
}
/* The cookie is written last, with release: whoever sees a valid cookie (the statistics walk
 * does, without the owner's cooperation) also sees the rest of the header. */
MTH_INLINE void mth_segment_publish(mth_segment_t *seg) {
  __atomic_store_n(&seg->cookie, (uintptr_t)seg ^ mth_secret, __ATOMIC_RELEASE);
}
/* A span segment given back to the arena keeps its header for the slot's next segment (its
 * dirty_mask says which slices are still resident: mth_header_init), under a cookie that no
 * longer validates: the statistics walk, which may reach the slot while its next owner is
 * rewriting the header, skips it (TSan: a read of kind racing with its write, when the old
 * cookie still validated). */
MTH_INLINE uintptr_t mth_cookie_freed(const mth_segment_t *seg) { return ((uintptr_t)seg ^ mth_secret) ^ 1; }
MTH_INLINE bool mth_segment_freed(const mth_segment_t *seg) {
  return __atomic_load_n(&seg->cookie, __ATOMIC_ACQUIRE) == mth_cookie_freed(seg);
}

/* ---- pages (page.c) ---- */
MTH_HIDDEN void *mth_page_alloc_slow(mth_heap_t *heap, size_t size);
MTH_HIDDEN void *mth_page_alloc_zero(mth_heap_t *heap, size_t size);
MTH_HIDDEN void *mth_page_alloc_growing(mth_heap_t *heap, size_t size);   /* MTH_CLASS_MAX < size <= MTH_LARGE_MAX */
MTH_HIDDEN void mth_page_free_local(mth_heap_t *heap, mth_page_t *page, mth_block_t *b);
MTH_HIDDEN void mth_pages_init(void);
MTH_HIDDEN void mth_free_emptied(mth_heap_t *heap, mth_page_t *list);   /* free's fast path: page.c */
MTH_HIDDEN void mth_bcache_trip(mth_heap_t *heap, mth_page_t *c);
MTH_HIDDEN bool mth_page_free_for(mth_heap_t *heap, mth_page_t *page, mth_block_t *b);
MTH_HIDDEN void mth_page_init(mth_heap_t *heap, mth_page_t *page, size_t bin, size_t block_size);
MTH_HIDDEN void mth_page_flush_stats(mth_heap_t *heap, mth_page_t *page);
MTH_HIDDEN void *mth_malloc_heartbeat(mth_page_t *page, mth_block_t *b);
/* A pop on a slow path (whose tick has run): the credit kept in step without a second tick. */
MTH_INLINE void *mth_page_pop(mth_heap_t *heap, mth_page_t *page) {
  mth_block_t *b = page->free;
  page->free = b->next;
  MTH_RACY_ADD(page->used, 1);
  MTH_RACY_ADD(page->credit, -1);
  if (page->credit == 0) mth_page_flush_stats(heap, page);
  return b;
}
MTH_HIDDEN void mth_heap_release_retained(mth_heap_t *heap);
MTH_HIDDEN void mth_direct_update(mth_heap_t *heap, size_t bin);
MTH_HIDDEN void mth_page_give_back(mth_heap_t *heap, mth_page_t *page, mth_block_t *b);

/* ---- block caches (bcache.c) ---- */
MTH_HIDDEN void mth_bcache_schedule(mth_heap_t *heap);
MTH_HIDDEN void mth_bcache_beat(mth_heap_t *heap, mth_page_t *cache);
MTH_HIDDEN void *mth_bcache_pop(mth_heap_t *heap, mth_page_t *cache);
MTH_HIDDEN void mth_bcache_scavenge(mth_heap_t *heap, uint64_t now);
MTH_HIDDEN void mth_bcache_flush(mth_heap_t *heap);
MTH_HIDDEN void mth_bcache_retrip(mth_page_t *c);
MTH_HIDDEN bool mth_bcache_grow(mth_heap_t *heap, mth_page_t *c);
MTH_HIDDEN void mth_lcache_scavenge(mth_heap_t *heap, bool all);   /* page.c */
MTH_HIDDEN bool mth_pages_give_back_kept(mth_heap_t *heap);          /* page.c */
/* The blocks cache c holds: trip - used (bcache.c).  Statistics read the two fields from other
 * threads without the lock: a torn pair is clamped to the cap. */
MTH_INLINE size_t mth_bcache_count(const mth_page_t *c) {
  uint32_t n = MTH_RACY_GET(c->trip) - MTH_RACY_GET(c->used);
  return n <= MTH_RACY_GET(c->capacity) ? n : MTH_RACY_GET(c->capacity);
}
MTH_HIDDEN void mth_free_twice(const void *p);   /* alloc.c */

/* b, freed by the owner into a full page of c's class, into cache c if there is room (true);
 * false when it is full, and the caller puts b on its page.  The caller has checked that b is
 * not c's first block already (freed twice in a row, the check pages make too) and schedules
 * the scavenge if none is (heap->bcache_scavenge_ms == 0).  The slow path's; free's fast path
 * pushes as onto a page and calls out when used reaches 0 (bcache.c). */
MTH_INLINE bool mth_bcache_put(mth_page_t *c, mth_block_t *b) {
  if (mth_bcache_count(c) >= c->capacity) return false;   /* full; capacity (the cap) 0: caches off */
  b->next = c->free;
  c->free = b;
  MTH_RACY_ADD(c->used, -1);
  if (c->used == 0) mth_bcache_retrip(c);   /* the fast path's next push must not pass 0 */
  return true;
}
MTH_HIDDEN void mth_retired_expire(mth_heap_t *heap);

/* ---- heaps (heap.c) ---- */

/* The heap's lock.  The owner holds it on every slow path; another thread holds it while it
 * frees blocks into the heap's full pages and large spans because the owner has left its inbox
 * undrained (inbox.c: a thread that allocated and went to sleep).  The owner's fast paths take
 * no lock: they touch only pages with room (the ones in its queues and direct[]) and, to free,
 * pages whose owner field names the heap; what the other thread touches -- full pages, large
 * spans, segments, the heap's statistics -- only slow paths touch.  The owner's entries nest
 * (lock_depth), so a slow path may call another; the other thread only ever tries (one CAS)
 * and goes to the inbox when the lock is taken. */
MTH_HIDDEN void mth_heap_enter_slow(mth_heap_t *heap);
MTH_INLINE void mth_heap_enter(mth_heap_t *heap) {
  if (heap->lock_depth++ != 0) return;
  int z = 0;
  if (MTH_LIKELY(atomic_compare_exchange_strong_explicit(&heap->lock, &z, 1, memory_order_acquire,
                                                         memory_order_relaxed)))
    return;
  mth_heap_enter_slow(heap);
}
MTH_INLINE void mth_heap_leave(mth_heap_t *heap) {
  if (--heap->lock_depth == 0) atomic_store_explicit(&heap->lock, 0, memory_order_release);
}
/* Another thread's attempt: never waits, never nests. */
MTH_INLINE bool mth_heap_try_enter_for(mth_heap_t *heap) {
  int z = 0;
  return atomic_load_explicit(&heap->lock, memory_order_relaxed) == 0 &&
         atomic_compare_exchange_strong_explicit(&heap->lock, &z, 1, memory_order_acquire,
                                                 memory_order_relaxed);
}
MTH_INLINE void mth_heap_leave_for(mth_heap_t *heap) {
  atomic_store_explicit(&heap->lock, 0, memory_order_release);
}
/* For the other thread, holding the lock: the owner is back and waits for it (heap.c). */
MTH_INLINE bool mth_heap_owner_waits(mth_heap_t *heap) {
  return atomic_load_explicit(&heap->lock, memory_order_relaxed) == 2;
}
MTH_HIDDEN mth_heap_t *mth_heap_get_slow(void);
MTH_HIDDEN void mth_heap_tick(mth_heap_t *heap);
MTH_HIDDEN void mth_heap_tick_beat(mth_heap_t *heap);
MTH_HIDDEN void mth_heap_tick_locked(mth_heap_t *heap);   /* mth_heap_tick, taking the lock */
MTH_HIDDEN void mth_process_init(void);
MTH_HIDDEN void mth_heaps_visit(void (*fn)(mth_heap_t *, void *), void *arg);
MTH_HIDDEN void mth_heaps_collect_abandoned(void);
MTH_HIDDEN mth_heap_t *mth_heaps_first(void);   /* the list of every heap, for a walk under mth_heaps_trylock */
MTH_HIDDEN bool mth_heaps_trylock(void);
MTH_HIDDEN void mth_heaps_unlock(void);

/* ---- remote frees (inbox.c) ---- */
/* Where mth_inbox_push put a block: a slot, the overflow list, or its page (an absent owner's
 * full page or large span, freed for it: inbox.c). */
typedef enum { MTH_INBOX_SLOT, MTH_INBOX_OVERFLOW, MTH_INBOX_FREED_FOR } mth_inbox_result_t;
MTH_HIDDEN mth_inbox_result_t mth_inbox_push(mth_heap_t *owner, mth_block_t *b);
MTH_HIDDEN void mth_heap_drain_remote(mth_heap_t *heap);
MTH_HIDDEN void mth_inbox_fork_child(mth_heap_t *heap);
MTH_HIDDEN void mth_inbox_drain_absent(mth_heap_t *heap);
MTH_HIDDEN bool mth_heap_absent(mth_heap_t *h, uint64_t now);   /* heap.c */

/* ---- frees (alloc.c) ---- */
MTH_HIDDEN void mth_free_slow(void *p);
MTH_HIDDEN void mth_free_page_slow(void *p, mth_page_t *page);
MTH_HIDDEN void mth_invalid_pointer(const char *what, const void *p, const char *why);
extern MTH_HIDDEN const char mth_why_double_free[];   /* the why of mth_free_twice's report */
extern MTH_HIDDEN void (*mth_invalid_hook)(const char *what, const void *p, const char *why);
MTH_HIDDEN void *mth_malloc_slow(size_t size);

#endif
