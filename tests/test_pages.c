/* Empty pages a thread keeps (src/page.c): the one page per small class, and the retired ring
 * that lets a batch of frees followed by a batch of mallocs reuse its pages instead of cycling
 * them through the segment.  The ring's bounds are the README's promise, so they are checked
 * through the statistics:
 *   reuse    100 blocks of 4 KiB (7 pages), 60 of 16 KiB (15 spans of four) allocated and freed,
 *            50 rounds: the class keeps its pages (no more than one round needs; a round takes
 *            no span from the segments), contents intact
 *   bound    empty pages of 24 classes at once: at most the per-class page of the small
 *            classes plus MTH_RETIRED_MAX pages of MTH_RETIRED_SLICES slices in all
 *   expire   after a batch (of two classes, live at once), other work that takes the slow
 *            path: retired pages go back within MTH_RETIRED_TICKS ticks; a class above 8 KiB
 *            keeps none
 *   collect  mtheap_collect(true) and thread exit give every kept page back
 *   aligned  random aligned blocks (memalign & co., alignments up to 1 MiB, sizes to 8 MiB) in
 *            64 slots, freed and replaced: after every step no two live blocks overlap and
 *            every one is still the allocator's.  Found by the API fuzzer: a page reused from
 *            the retired ring, given an aligned block and emptied again went back to its
 *            segment while still listed; the ring later freed its slices a second time, under
 *            a span that held live blocks (a 10-slice block overlapped by the next span).
 *   heartbeat  a thread whose blocks another thread freed, and that then only mallocs and frees
 *            one block on the fast path, still takes those frees in (every MTH_HEARTBEAT
 *            mallocs from a page one runs the tick): a third thread's statistics, which
 *            count a remote free once its owner has reclaimed it, see them before the end
 *   absent   a thread that allocated 40 pages of blocks and then waits (pthread_join) while
 *            another frees them all, half, a pause of 30 ms, half: the freer, finding the owner's
 *            inbox full and the owner away, frees into its full pages itself and their spans go
 *            back before the owner runs; after
 *            other threads' slow paths for a while the rest of the inbox is taken in for it too,
 *            and the owner's next slow path takes in the blocks of its last page
 *   absent_back  the same owner, three rounds: it allocates the 40 pages again each time (so
 *            it came back) and sleeps while another thread frees them: the first round's
 *            emptied pages go to the OS at once, the later rounds' wait out the purge delay,
 *            as its own frees' do (it would fault them in again: src/segment.c)
 *   absent_adopt  two such rounds by a thread that then exits, and a third by the next thread,
 *            which adopts its heap: the adopter's emptied pages go to the OS at once again (the
 *            first owner's come-backs are not its own)
 *   lifo     a freed block of a big class (above 8 KiB) whose page was full is the class's next
 *            malloc, though another page of the class has free blocks: the block just freed
 *            is the one in cache (its page goes to the front of the class's queue)
 *   carve    a fresh page's first malloc faults in one OS page of the span, whatever the class
 *            (1-8 KiB, in a new thread's own segment): carving the allocation list ahead of
 *            use writes a word into each block, and up to 8 blocks of 4 KiB were carved, 32 KiB
 *            resident for stdio's one buffer; the blocks then handed out are distinct and
 *            each still faults in only its own pages
 *   spans    a new thread's first block of a class takes a span of the class's length: one
 *            32 KiB slice up to 2 KiB blocks, 64 KiB from there to 8 KiB (16 blocks of 4 KiB
 *            per page), four blocks above (64 KiB for 12 KiB; from 16 KiB each block in slices
 *            of its own: 128 KiB for 16 and 20 KiB, 512 KiB for 128 KiB): short pages for the
 *            many classes every thread uses, long enough ones for batches
 *   spread   from MTH_SPREAD_MIN (16 KiB) up, every block of a page starts on a slice, so a
 *            program that writes only the first bytes of its big blocks makes resident at
 *            most one OS page per slice; below, blocks are packed; each block is usable and
 *            intact to its class size, and a pointer between two blocks (after one's end,
 *            before the next slice) is no block's
 *   footprint  a new thread that mallocs one small block: its heap starts a page and has at
 *            most two resident pages (the block caches, set up on first use, and the remote-free
 *            inbox stay untouched), its segment's header one; then the first page of a cached
 *            class that fills sets up that class's cache, which takes a block freed into the
 *            page and hands it back.  (bench/tools/thread_footprint 64 64: 40.9 KiB per thread before these
 *            changes, 26.3 after; glibc 11.2.)
 *   bound and expire run with MTHEAP_BCACHE=0: they count the kept empty pages, and a block
 *            cache (src/bcache.c) keeps pages from emptying; the cases below check the caches:
 *   bcache_bound    2000 blocks of 16 KiB freed (half by another thread): the class keeps at
 *            most one page per block its cache may hold (its 2 MiB and the heap's 8 MiB of
 *            loans, at most 255 blocks) plus the ring, its statistics count every
 *            block free, and 2000 blocks allocated again are each intact and distinct
 *   bcache_scavenge the same freed by the owner, then only other work: the idle cache gives its
 *            blocks back (every 100 ms, what stayed unused) and the class's pages go within 2 s
 *   bcache_exit     a thread that fills its cache and exits leaves no page of the class
 *   bcache_direct   batches of 9 KiB blocks, whose last page keeps room to carve: the cached
 *            blocks are taken on malloc's fast path, not one slow call each
 *   bcache_loan     a cache full at its own 2 MiB borrows from the heap's 8 MiB: a burst of
 *            100 x 64 KiB stays in the cache and its pages (no span operation in a round);
 *            bursts in six classes keep the caches and loans within their bounds; idle, the
 *            loans come back and the pages go
 *   bcache_newseg  a new thread fills two segments with 16 KiB blocks and frees them all
 *            into its cache (pages stay full); a 1 MiB block then finds no room in them: the
 *            cached blocks go back and it lands in one of those segments, not a new one
 *   lcache   freed large spans kept for reuse: the next malloc of the length takes one back
 *            with no span operation, calloc's is zeroed, one slice longer serves, at most
 *            MTH_LCACHE_MAX spans of MTH_LCACHE_SLICES kept, none after 2 s idle or collect
 *   refill   two full pages of a class and a front page with free blocks: a block freed into a
 *            full page does not take the front; the front page's free blocks go first, then
 *            that block, before the front page carves fresh memory
 *   drain    640 blocks of one class (256 B, 1 KiB, 4 KiB), a random half freed, then 100 000
 *            random replacements at that count: the class ends with about as many pages as
 *            its live blocks fill (at most its full count in proportion, plus two).  Pages
 *            that got a block back are refilled first and the sparse ones empty and go; when
 *            every page took its turn (the queue's back, before) none ever emptied: 317 blocks
 *            of 1 KiB kept all 20 pages (bound 12); now 10.
 *   borrow   a new thread's first spans go on another thread's free resident slices, are the
 *            new thread's pages (a third thread's free goes to its inbox), and go back to the
 *            lender's segment when emptied: at once, or through the lender's spans_back while
 *            its lock is taken, until its next tick (src/lend.c)
 *   kept     one block of each of 20 classes above 8 KiB in turn: the ring's empty pages go
 *            back before a new page takes fresh slices, so the thread holds about one page's
 *            spans at a time (416 KiB; the ring's 19 pages made it 2336 KiB)
 *   trigger  a window of 3000 blocks of random sizes (most small, some above 8 KiB, a few large
 *            spans) replaced 60 000 times, then half freed, then all: every slice of a page
 *            with our tag names the list free's fast path pushes its blocks on (the page when
 *            it has room, the class's cache when it is full), and every cache stays within its
 *            cap, trips (calls out of the fast path, src/bcache.c) at its cap + 1 at the latest
 *            and never lets a push pass its trip count, and trips on its first block when no
 *            scavenge is scheduled
 *   popcount mth_popcount64, which the span search counts resident slices with, against a
 *            loop: edge cases and 200 000 random words of every density
 * usage: test_pages reuse|bound|expire|collect|aligned|heartbeat|absent|absent_back|absent_adopt|lifo|refill|carve|footprint|spans|spread|bcache_bound|bcache_scavenge|bcache_exit|bcache_direct|bcache_loan|bcache_newseg|borrow|lcache|kept|drain|trigger|popcount */
#include "testutil.h"
#include <semaphore.h>
#include <sys/mman.h>

#include "internal.h"   /* the bounds checked: MTH_RETIRED_MAX, MTH_RETIRED_SLICES; the geometry */

#define SLICE MTH_SLICE_SIZE

/* The cases that need a heap of their own run fn in a new thread. */
static void in_new_thread(void *(*fn)(void *)) {
  pthread_t t;
  th_thread(&t, fn, NULL);
  th_join(t);
}

static uint64_t class_pages(size_t block_size) {
  struct mtheap_stats st;
  th_stats(&st);
  for (int i = 0; i < MTHEAP_NUM_CLASSES; i++)
    if (st.classes[i].block_size == block_size) return st.classes[i].pages;
  return 0;
}

static uint64_t all_pages(void) {
  struct mtheap_stats st;
  th_stats(&st);
  uint64_t n = 0;
  for (int i = 0; i < MTHEAP_NUM_CLASSES; i++) n += st.classes[i].pages;
  return n;
}

static void batch(size_t size, int n, uint64_t seed) {
  void *p[256];
  TCHECK(n <= 256);
  for (int i = 0; i < n; i++) {
    p[i] = T_MALLOC(size);
    TCHECK(p[i] != NULL);
    th_fill_seed(p[i], size, seed + (uint64_t)i);
  }
  for (int i = 0; i < n; i++) {
    th_verify_seed(p[i], size, size, seed + (uint64_t)i);
    T_FREE(p[i]);
  }
}

static void case_reuse(void) {
  const size_t sizes[] = {4096, 16384};
  const int counts[] = {100, 60};
  for (int s = 0; s < 2; s++) {
    size_t size = sizes[s];
    int n = counts[s];
    batch(size, n, 1);
    uint64_t after_one = class_pages(size);
    TCHECKF(after_one >= 1, "class %zu: no page kept after a batch", size);
    for (int r = 0; r < 50; r++) {
      batch(size, n, (uint64_t)r << 8);
      uint64_t now = class_pages(size);
      TCHECKF(now <= after_one, "class %zu: %" PRIu64 " pages after round %d, %" PRIu64 " after the first",
              size, now, r, after_one);
    }
    struct mtheap_stats a, b;
    th_stats(&a);
    batch(size, n, 99);
    th_stats(&b);
    /* a round reuses the kept pages: no span taken from or returned to the segments */
    TCHECKF(b.span_ops == a.span_ops, "class %zu: %" PRIu64 " span operations in a round that reuses its pages",
            size, b.span_ops - a.span_ops);
    mtheap_collect(true);
    TCHECKF(class_pages(size) == 0, "class %zu: %" PRIu64 " pages after mtheap_collect(true)", size,
            class_pages(size));
  }
}

static void require_no_bcache(void) {
  const char *v = getenv("MTHEAP_BCACHE");
  TCHECKF(v && !strcmp(v, "0"), "%s", "this case counts empty pages: run it with MTHEAP_BCACHE=0 (ctest does)");
}

static void case_bound(void) {
  require_no_bcache();
  /* 24 classes from 1 KiB to 40 KiB, three pages' worth of blocks each, then all freed */
  size_t kept_small = 0;
  for (int c = 0; c < 24; c++) {
    size_t size = 1024 + (size_t)c * 1664;
    size_t per_page = size <= 8192 ? MTH_SMALL_PAGE_MAX / size : 8;
    int n = (int)(3 * per_page);
    if (n > 256) n = 256;
    batch(size, n, (uint64_t)c << 16);
    if (size <= 8192) kept_small++;
  }
  uint64_t pages = all_pages();
  TCHECKF(pages <= kept_small + MTH_RETIRED_MAX, "%" PRIu64 " empty pages kept, bound %zu", pages,
          kept_small + MTH_RETIRED_MAX);
  struct mtheap_stats st;
  th_stats(&st);
  /* the ring holds at most MTH_RETIRED_SLICES slices; each small class keeps one page */
  size_t bound = kept_small * MTH_SMALL_PAGE_MAX + (size_t)MTH_RETIRED_SLICES * SLICE;
  TCHECKF(st.pages_in_use <= bound, "%zu bytes of pages in use with nothing live, bound %zu", st.pages_in_use,
          bound);
  mtheap_collect(true);
}

static void case_expire(void) {
  require_no_bcache();
  /* both batches live at once, then freed: a batch taking fresh slices after the other's pages
   * were retired would make them go back at once (mth_pages_give_back_kept) */
  void *a[100], *b[100];
  for (int i = 0; i < 100; i++) TCHECK((a[i] = T_MALLOC(16384)) != NULL && (b[i] = T_MALLOC(4096)) != NULL);
  for (int i = 0; i < 100; i++) {
    T_FREE(a[i]);
    T_FREE(b[i]);
  }
  TCHECK(class_pages(16384) > 1 && class_pages(4096) > 1);
  /* slow-path work elsewhere: every malloc of a fresh class runs the tick */
  for (int round = 0; round < 3000; round++) {
    void *p[64];
    for (int i = 0; i < 64; i++) TCHECK((p[i] = T_MALLOC(32 + (size_t)(round % 4) * 16)) != NULL);
    for (int i = 0; i < 64; i++) T_FREE(p[i]);
    batch(200000, 2, (uint64_t)round);   /* large spans: always the slow path */
  }
  TCHECKF(class_pages(16384) == 0, "class 16384: %" PRIu64 " pages still kept", class_pages(16384));
  TCHECKF(class_pages(4096) <= 1, "class 4096: %" PRIu64 " pages still kept", class_pages(4096));
  mtheap_collect(true);
}

static void *exiting_thread(void *arg) {
  batch(4096, 100, 3);
  batch(16384, 100, 4);
  batch(512, 256, 5);
  return arg;
}

static void case_collect(void) {
  batch(4096, 100, 1);
  batch(512, 256, 2);
  mtheap_collect(true);
  TCHECKF(all_pages() == 0, "%" PRIu64 " pages after mtheap_collect(true)", all_pages());
  pthread_t t;
  th_thread(&t, exiting_thread, NULL);
  th_join(t);
  TCHECKF(all_pages() == 0, "%" PRIu64 " pages after a thread's exit", all_pages());
}

static void case_aligned(void) {
  struct { char *p; size_t size; } keep[64] = { { 0 } };
  uint64_t seed = 1;
  for (int it = 0; it < 20000; it++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t r = seed >> 11;
    int s = (int)(r % 64);
    if (keep[s].p) T_FREE(keep[s].p);
    size_t align = (size_t)1 << ((r >> 6) % 21);
    size_t size = (r >> 11) % 3 ? (size_t)((r >> 13) % 70000) : (size_t)((r >> 13) % (8u << 20));
    int kind = (int)((r >> 40) % 3);
    void *p = NULL;
    if (kind == 0) { if (T_POSIX_MEMALIGN(&p, align < 8 ? 8 : align, size)) p = NULL; }
    else if (kind == 1) p = T_ALIGNED_ALLOC(align, size);
    else p = T_MEMALIGN(align, size);
    TCHECKF(p && ((uintptr_t)p & (align - 1)) == 0, "step %d: align %zu size %zu: %p", it, align, size, p);
    keep[s].p = p;
    keep[s].size = size ? size : 1;
    for (int i = 0; i < 64; i++) {
      if (!keep[i].p) continue;
      TCHECKF(mtheap_owns(keep[i].p), "step %d: live block %p (%zu bytes) is no longer the allocator's",
              it, (void *)keep[i].p, keep[i].size);
      if (i == s) continue;
      TCHECKF(!(keep[s].p < keep[i].p + keep[i].size && keep[i].p < keep[s].p + keep[s].size),
              "step %d: new block %p+%zu overlaps live block %p+%zu", it, (void *)keep[s].p,
              keep[s].size, (void *)keep[i].p, keep[i].size);
    }
  }
  for (int i = 0; i < 64; i++) T_FREE(keep[i].p);
}

/* Fewer than the inbox's 1024 slots: more would overflow them, and the freeing thread would
 * free the rest into the sleeping owner's full pages itself (src/inbox.c, case_absent). */
#define HB_BLOCKS 1000
#define HB_SIZE 48
static void *hb_blocks[HB_BLOCKS];

static void *hb_free_all(void *arg) {
  for (int i = 0; i < HB_BLOCKS; i++) T_FREE(hb_blocks[i]);
  return arg;
}

/* The live blocks of HB_SIZE's class, as a thread other than their owner sees them (its own
 * statistics call drains only its own inbox). */
static void *hb_live(void *out) {
  struct mtheap_stats st;
  th_stats(&st);
  for (int i = 0; i < MTHEAP_NUM_CLASSES; i++)
    if (st.classes[i].block_size == HB_SIZE) *(uint64_t *)out = st.classes[i].mallocs - st.classes[i].frees;
  return NULL;
}

static uint64_t hb_live_seen_by_other(void) {
  uint64_t live = UINT64_MAX;
  pthread_t t;
  th_thread(&t, hb_live, &live);
  th_join(t);
  return live;
}

static void case_heartbeat(void) {
  void *warm = T_MALLOC(64);   /* the class's page exists: the loop below never leaves the fast path */
  T_FREE(warm);
  for (int i = 0; i < HB_BLOCKS; i++) TCHECK((hb_blocks[i] = T_MALLOC(HB_SIZE)) != NULL);
  pthread_t t;
  th_thread(&t, hb_free_all, NULL);
  th_join(t);
  uint64_t before = hb_live_seen_by_other();
  TCHECKF(before == HB_BLOCKS, "%" PRIu64 " live blocks of %d bytes before the owner ran at all, expected %d",
          before, HB_SIZE, HB_BLOCKS);
  for (int i = 0; i < 2 * MTH_HEARTBEAT + 10; i++) {
    void *p = T_MALLOC(64);
    TCHECK(p != NULL);
    *(volatile char *)p = 1;
    T_FREE(p);
  }
  uint64_t after = hb_live_seen_by_other();
  TCHECKF(after == 0, "%" PRIu64 " of %d remotely freed blocks still not taken in after %d fast-path mallocs",
          after, HB_BLOCKS, 2 * MTH_HEARTBEAT + 10);
}

/* Blocks of one class the owner allocated and then stopped calling malloc (it waits in
 * pthread_join): another thread frees them all.  AB_PAGES pages of AB_SIZE blocks, filled
 * exactly, so every page but the last is marked full. */
#define AB_SIZE 48
#define AB_PER_PAGE (32768 / AB_SIZE)
#define AB_PAGES 40
#define AB_BLOCKS (AB_PAGES * AB_PER_PAGE)
static void *ab_blocks[AB_BLOCKS];

/* Half, a pause longer than MTH_ABSENT_MS (10 ms: the owner took no slow path meanwhile, so
 * it is away), the other half. */
static void *ab_free_all(void *arg) {
  for (int i = 0; i < AB_BLOCKS / 2; i++) T_FREE(ab_blocks[i]);
  usleep(30 * 1000);
  for (int i = AB_BLOCKS / 2; i < AB_BLOCKS; i++) T_FREE(ab_blocks[i]);
  return arg;
}

static void *ab_stats(void *out) {
  th_stats((struct mtheap_stats *)out);
  return NULL;
}

static uint64_t ab_live(const struct mtheap_stats *st) {
  for (int i = 0; i < MTHEAP_NUM_CLASSES; i++)
    if (st->classes[i].block_size == AB_SIZE) return st->classes[i].mallocs - st->classes[i].frees;
  return UINT64_MAX;
}

static void ab_stats_seen_by_other(struct mtheap_stats *st) {
  pthread_t t;
  th_thread(&t, ab_stats, st);
  th_join(t);
}

/* Slow paths for a while (a class's page filled and emptied over and over), so this thread's
 * ticks look at the other heaps (src/heap.c: mth_heaps_help_absent). */
static void *ab_busy(void *arg) {
  uint64_t t0 = th_now_ms();
  static _Thread_local void *v[600];
  while (th_now_ms() - t0 < 300) {
    for (int i = 0; i < 600; i++) TCHECK((v[i] = T_MALLOC(1000 + (size_t)(i % 7) * 16)) != NULL);
    for (int i = 0; i < 600; i++) T_FREE(v[i]);
  }
  return arg;
}

static void case_absent(void) {
  for (int i = 0; i < AB_BLOCKS; i++) TCHECK((ab_blocks[i] = T_MALLOC(AB_SIZE)) != NULL);
  struct mtheap_stats st0, st1, st2, st3;
  ab_stats_seen_by_other(&st0);
  TCHECKF(ab_live(&st0) == AB_BLOCKS, "%" PRIu64 " live blocks of %d bytes, expected %d", ab_live(&st0),
          AB_SIZE, AB_BLOCKS);
  pthread_t t;
  th_thread(&t, ab_free_all, NULL);
  th_join(t);
  /* after the pause the freer, overflowing the owner's 1024 slots, freed into its full pages
   * itself, the backlog too: what is left is the last page (not marked full: its owner took no
   * slow path since it filled) and at most the slots' worth freed last */
  ab_stats_seen_by_other(&st1);
  uint64_t live1 = ab_live(&st1);
  TCHECKF(live1 <= AB_PER_PAGE + 1024,
          "%" PRIu64 " of %d blocks freed by another thread still live while their owner sleeps "
          "(expected at most %d: its last page and one inbox)", live1, AB_BLOCKS, AB_PER_PAGE + 1024);
  TCHECKF(st0.pages_in_use - st1.pages_in_use >= (size_t)(AB_PAGES - 4) * 32768,
          "pages in use %zu -> %zu bytes: the emptied pages did not go back while their owner sleeps",
          st0.pages_in_use, st1.pages_in_use);
  /* another thread's slow paths, 300 ms a round: the owner is absent (no slow path for 10 ms),
   * its inbox's tail is taken in for it and only the last page's blocks wait for it.  Up to
   * 20 rounds: on a loaded machine (ctest -j2 beside the sanitizer builds) the busy thread
   * may get little of its 300 ms on a CPU */
  uint64_t live2 = UINT64_MAX;
  for (int round = 0; round < 20 && live2 > AB_PER_PAGE; round++) {
    th_thread(&t, ab_busy, NULL);
    th_join(t);
    ab_stats_seen_by_other(&st2);
    live2 = ab_live(&st2);
  }
  TCHECKF(live2 <= AB_PER_PAGE, "%" PRIu64 " blocks still live after 20 rounds of another thread's "
          "ticks (expected at most the owner's last page, %d)", live2, AB_PER_PAGE);
  /* the owner's next slow path takes the rest in */
  void *big = T_MALLOC(200000);
  TCHECK(big != NULL);
  T_FREE(big);
  ab_stats_seen_by_other(&st3);
  TCHECKF(ab_live(&st3) == 0, "%" PRIu64 " blocks live after the owner ran", ab_live(&st3));
}

/* One round of case_absent_back: the owner allocates, sleeps in pthread_join while another
 * thread frees everything; returns the bytes purged meanwhile, checks the pages went back. */
static size_t ab_round(int round) {
  for (int i = 0; i < AB_BLOCKS; i++) TCHECK((ab_blocks[i] = T_MALLOC(AB_SIZE)) != NULL);
  struct mtheap_stats st0, st1;
  ab_stats_seen_by_other(&st0);
  pthread_t t;
  th_thread(&t, ab_free_all, NULL);
  th_join(t);
  ab_stats_seen_by_other(&st1);
  TCHECKF(st0.pages_in_use - st1.pages_in_use >= (size_t)(AB_PAGES - 4) * 32768,
          "round %d: pages in use %zu -> %zu bytes: the emptied pages did not go back while their "
          "owner sleeps", round, st0.pages_in_use, st1.pages_in_use);
  return st1.purged - st0.purged;
}

static void case_absent_back(void) {
  size_t first = ab_round(1);
  TCHECKF(first >= (size_t)(AB_PAGES - 4) * 32768,
          "round 1: %zu bytes purged while the owner slept, expected its emptied pages (%d bytes)",
          first, (AB_PAGES - 4) * 32768);
  for (int r = 2; r <= 3; r++) {
    size_t again = ab_round(r);
    TCHECKF(again < 4 * 32768,
            "round %d: %zu bytes purged while the owner slept, though it came back after round 1 "
            "(its emptied pages should wait out the purge delay)", r, again);
  }
}

/* The first owner: round 1 (purged at once) and 2 (it came back: the delay), then it exits. */
static void *ab_first_owner(void *arg) {
  (void)arg;
  size_t first = ab_round(1), again = ab_round(2);
  TCHECKF(first >= (size_t)(AB_PAGES - 4) * 32768 && again < 4 * 32768,
          "first owner: %zu bytes purged in round 1, %zu in round 2", first, again);
  return NULL;
}

/* The next thread adopts the parked heap: to it the heap is new, and its first sleep gets its
 * emptied pages purged at once, as round 1 did (the first owner's returns are not its own). */
static void *ab_adopter(void *arg) {
  size_t *purged = arg;
  *purged = ab_round(3);
  return NULL;
}

static void case_absent_adopt(void) {
  pthread_t t;
  th_thread(&t, ab_first_owner, NULL);
  th_join(t);
  size_t purged = 0;
  struct mtheap_stats st0, st1;
  th_stats(&st0);
  th_thread(&t, ab_adopter, &purged);
  th_join(t);
  th_stats(&st1);
  TCHECKF(st1.heaps_reused >= st0.heaps_reused + 1, "the second thread did not adopt a parked heap "
          "(heaps reused %" PRIu64 " -> %" PRIu64 ")", st0.heaps_reused, st1.heaps_reused);
  TCHECKF(purged >= (size_t)(AB_PAGES - 4) * 32768,
          "the adopter's first sleep: %zu bytes purged, expected its emptied pages (%d bytes): "
          "it inherited the first owner's come-backs", purged, (AB_PAGES - 4) * 32768);
}

static size_t resident_range(const void *p, size_t len) {
  uint8_t *a = (uint8_t *)((uintptr_t)p & ~(uintptr_t)4095);
  size_t n = ((uint8_t *)p + len - a + 4095) / 4096;
  unsigned char v[64];
  TCHECK(n <= sizeof v);
  TCHECK(mincore(a, n * 4096, v) == 0);
  size_t r = 0;
  for (size_t i = 0; i < n; i++) r += v[i] & 1;
  return r;
}

static size_t resident_in_slice(const void *p) {
  return resident_range((const void *)((uintptr_t)p & ~(SLICE - 1)), SLICE);
}

static void *carve_thread(void *arg) {
  (void)arg;
  static const size_t sizes[] = {1024, 1536, 2048, 3072, 4096, 6144, 8192};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    size_t sz = sizes[i];
    uint8_t *p = T_MALLOC(sz);
    TCHECK(p != NULL);
    size_t got = resident_in_slice(p);
    if (got != 1) TFAIL("first malloc(%zu) of a fresh page: %zu OS pages resident in its slice, expected 1", sz, got);
    /* the next blocks of the page: distinct, each touching only what it covers */
    uint8_t *q = T_MALLOC(sz), *r = T_MALLOC(sz);
    TCHECK(q && r && q != p && r != p && r != q);
    TCHECK((uintptr_t)q >> MTH_SLICE_SHIFT == (uintptr_t)p >> MTH_SLICE_SHIFT &&
           (uintptr_t)r >> MTH_SLICE_SHIFT == (uintptr_t)p >> MTH_SLICE_SHIFT);
    size_t span = (size_t)((r > q ? r : q) + sz - p);
    if (resident_in_slice(p) > span / 4096 + 2)
      TFAIL("three mallocs of %zu: %zu OS pages resident, more than the %zu bytes they cover", sz,
            resident_in_slice(p), span);
    T_FREE(r); T_FREE(q); T_FREE(p);
  }
  return NULL;
}



static void *footprint_thread(void *arg) {
  (void)arg;
  void *p = T_MALLOC(64);
  TCHECK(p != NULL);
  mth_heap_t *heap = mth_tls_heap;
  TCHECKF((uintptr_t)heap % 4096 == 0, "heap %p not on a page boundary", (void *)heap);
  size_t hp = resident_range(heap, sizeof *heap);
  if (hp > 2) TFAIL("a new thread's heap has %zu resident pages, expected at most 2", hp);
  size_t sp = resident_range(mth_segment_of(p), sizeof(mth_segment_t));
  if (sp > 1) TFAIL("a new thread's segment header has %zu resident pages, expected 1", sp);
  /* one block of every class up to 8 KiB, each a slow path that finds its class empty: the
   * descriptors of caches never set up stay untouched, not even read */
  void *one[MTH_BCACHE_BIG];
  for (size_t bin = 1; bin < MTH_BCACHE_BIG; bin++) TCHECK((one[bin] = T_MALLOC(mth_bin_size(bin))) != NULL);
  uintptr_t lo = ((uintptr_t)heap->bcache + 4095) & ~(uintptr_t)4095;
  uintptr_t hi = (uintptr_t)(heap->bcache + MTH_BCACHE_BINS) & ~(uintptr_t)4095;
  TCHECK(hi > lo);
  size_t dp = resident_range((void *)lo, hi - lo);
  if (dp > 0) TFAIL("a thread with a block of each class up to 8 KiB and no cache set up has %zu "
                    "resident pages of cache descriptors, expected none", dp);
  for (size_t bin = 1; bin < MTH_BCACHE_BIG; bin++) T_FREE(one[bin]);
  for (size_t k = 0; k < MTH_BCACHE_BINS; k++) TCHECK(heap->bcache[k].flags == 0);
  /* 20 KiB blocks: the class has a cache, set up when its first page fills (its frees go
   * there); fill a page, free one block into it (full) */
  enum { N = 16 };
  void *q[N];
  mth_page_t *c = &heap->bcache[mth_bin_of(20000) - MTH_BCACHE_BIN0];
  for (int i = 0; i < N; i++) {
    TCHECK((q[i] = T_MALLOC(20000)) != NULL);
    if (i == 0) TCHECKF(c->flags == 0, "%s", "one block of a cached class, and its cache is set up");
  }
  TCHECKF(c->flags == MTH_PAGE_META && mth_bcache_count(c) == 0, "a full page of a cached class, and its "
          "cache is not set up (flags %u, %zu cached)", c->flags, mth_bcache_count(c));
  T_FREE(q[0]);
  TCHECKF(mth_bcache_count(c) == 1, "a free into a full page of a cached class: %zu cached, expected 1",
          mth_bcache_count(c));
  void *again = T_MALLOC(20000);
  TCHECKF(again == q[0], "the cached block %p was not the next malloc of its class (%p)", q[0], again);
  for (int i = 0; i < N; i++) T_FREE(i ? q[i] : again);
  T_FREE(p);
  return NULL;
}

static size_t spans_now(void) {
  struct mtheap_stats st;
  th_stats(&st);
  return st.pages_in_use;
}

static void *spans_thread(void *arg) {
  (void)arg;
  static const struct { size_t size, span; } want[] = {
      {16, 32 << 10},   {1024, 32 << 10}, {2048, 32 << 10},  {4096, 64 << 10},
      {8192, 64 << 10}, {12288, 64 << 10}, {16384, 128 << 10}, {20480, 128 << 10}, {131072, 512 << 10}};
  void *keep[sizeof want / sizeof *want];
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    size_t before = spans_now();
    keep[i] = T_MALLOC(want[i].size);
    TCHECK(keep[i] != NULL);
    size_t got = spans_now() - before;
    if (got != want[i].span)
      TFAIL("first malloc(%zu) of a new thread took a span of %zu KiB, expected %zu KiB", want[i].size,
            got >> 10, want[i].span >> 10);
  }
  /* 16 blocks of 4 KiB share the page the first one opened; the 17th opens another */
  void *more[16];
  size_t before = spans_now();
  for (int i = 0; i < 15; i++) TCHECK((more[i] = T_MALLOC(4096)) != NULL);
  TCHECKF(spans_now() == before, "%s", "16 blocks of 4 KiB did not fit one page");
  TCHECK((more[15] = T_MALLOC(4096)) != NULL);
  TCHECKF(spans_now() - before == (64 << 10), "the 17th block of 4 KiB took %zu KiB of spans, expected a "
          "64 KiB page", (spans_now() - before) >> 10);
  for (int i = 0; i < 16; i++) T_FREE(more[i]);
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) T_FREE(keep[i]);
  return NULL;
}

static void case_spans(void) { in_new_thread(spans_thread); }

static void *spread_thread(void *arg) {
  (void)arg;
  static const size_t sizes[] = {12288, 16000, 16384, 20000, 40000, 100000, 131072};
  enum { N = 8 };   /* two pages of four */
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t size = sizes[k], cls = mth_bin_size(mth_bin_of(size));
    bool spread = cls >= 16384;   /* MTH_SPREAD_MIN, as documented: the test fails if it moves */
    unsigned char *p[N];
    int packed = 0;
    for (int i = 0; i < N; i++) {
      TCHECK((p[i] = T_MALLOC(size)) != NULL);
      TCHECKF(T_USABLE_SIZE(p[i]) == cls, "malloc(%zu): usable size %zu, expected its class's %zu", size,
              T_USABLE_SIZE(p[i]), cls);
      th_fill_seed(p[i], cls, 4000 + k * N + (uint64_t)i);
      if (spread)
        TCHECKF(((uintptr_t)p[i] & (SLICE - 1)) == 0, "block %d of malloc(%zu) at %p: not on a slice", i,
                size, (void *)p[i]);
      if (i && (p[i] == p[i - 1] + cls || p[i] == p[i - 1] - cls)) packed++;   /* carved, or reused LIFO */
    }
    if (!spread)
      TCHECKF(packed >= N / 2, "blocks of malloc(%zu) are not packed (%d of %d follow their predecessor)", size,
              packed, N - 1);
    for (int i = 0; i < N; i++) {
      if (spread && cls % SLICE != 0) {
        /* past the block's end, before the next slice: no block starts there */
        unsigned char *gap = p[i] + cls;
        TCHECKF(mth_block_offset(mth_page_of(mth_segment_of(gap), gap), gap) >= cls,
                "a pointer %zu bytes past block %p of class %zu is taken for a block's start", cls, (void *)p[i],
                cls);
      }
      th_verify_seed(p[i], cls, cls, 4000 + k * N + (uint64_t)i);
    }
    for (int i = 0; i < N; i++) T_FREE(p[i]);
  }
  return NULL;
}

static void case_spread(void) { in_new_thread(spread_thread); }

static void case_footprint(void) { in_new_thread(footprint_thread); }

static void case_carve(void) { in_new_thread(carve_thread); }

static void case_lifo(void) {
  enum { N = 42 };            /* spans of four 16 KiB blocks: ten full ones and one half full */
  const size_t size = 16384;
  void *p[N];
  for (int i = 0; i < N; i++) {
    p[i] = T_MALLOC(size);
    TCHECK(p[i] != NULL);
    th_fill_seed(p[i], size, 500 + (uint64_t)i);
  }
  for (int round = 0; round < 8; round++) {
    int k = 4 + round * 4;      /* a block of a different full span each round */
    void *freed = p[k];
    T_FREE(freed);
    p[k] = T_MALLOC(size);
    TCHECKF(p[k] == freed, "round %d: the block just freed (%p, its span was full) was not the next "
            "malloc of its class (got %p)", round, freed, p[k]);
    th_fill_seed(p[k], size, 500 + (uint64_t)k);
  }
  for (int i = 0; i < N; i++) {
    th_verify_seed(p[i], size, size, 500 + (uint64_t)i);
    T_FREE(p[i]);
  }
}

/* Blocks of 1536 bytes (a class nothing else here uses): two full pages, and a front page with
 * blocks carved and free.  A block freed into a full page puts that page second in the queue:
 * the front page's free blocks go first, then that block, before the front page carves fresh
 * memory. */
static void case_refill(void) {
  const size_t size = 1536;
  enum { MOST = 200 };
  void *p[MOST];
  p[0] = T_MALLOC(size);
  TCHECK(p[0] != NULL);
  mth_page_t *first = mth_page_of(mth_segment_of(p[0]), p[0]);
  int per = first->reserved, n = 1;
  /* two pages, one block, and at most a page's worth of carved blocks fit in p[] */
  TCHECKF(per >= 4 && 3 * per + 1 <= MOST, "%d blocks of %zu bytes a page", per, size);
  while (n < 2 * per + 1) TCHECK((p[n++] = T_MALLOC(size)) != NULL);
  mth_page_t *a = mth_page_of(mth_segment_of(p[per - 1]), p[per - 1]);
  mth_page_t *front = mth_page_of(mth_segment_of(p[n - 1]), p[n - 1]);
  int carved = 0;
  for (mth_block_t *b = front->free; b; b = b->next) carved++;
  TCHECKF(a->used == a->reserved && front != a && carved > 0 && front->capacity < front->reserved,
          "setup: page of block %d has %u of %u out, the front page %u of %u with %d free and %u "
          "carved", per - 1, (unsigned)a->used, (unsigned)a->reserved, (unsigned)front->used,
          (unsigned)front->reserved, carved, (unsigned)front->capacity);
  void *freed = p[per - 1];
  T_FREE(freed);
  for (int i = 0; i < carved; i++) {
    void *q = T_MALLOC(size);
    TCHECK(q != NULL);
    TCHECKF(mth_page_of(mth_segment_of(q), q) == front,
            "malloc %d of %d after a free into a full page: %p is not on the front page, which "
            "still had free blocks (a free into a full page took the front)", i + 1, carved, q);
    p[n++] = q;
  }
  void *q = T_MALLOC(size);
  TCHECKF(q == freed, "the front page's free blocks used, the next malloc got %p, not the block "
          "freed into a full page (%p): fresh memory carved before a freed block", q, freed);
  p[per - 1] = q;
  for (int i = 0; i < n; i++) T_FREE(p[i]);
}

/* Classes up to 8 KiB get block caches only while the heap's blocks of them exceed
 * MTH_LIFO_BYTES (bcache.c).  Below: a free into a full page goes back to its page, which waits
 * behind the front page (case_refill).  Above: it goes to the class's cache, the next malloc of
 * the class takes it back (the last freed, still in cache), the cache holds at most
 * MTH_BCACHE_SMALL_BYTES of the class, the statistics count none of it live, and with every
 * block freed and collected the heap's count is back to zero. */
enum { LS_SMALL = 2048, LS_N = (int)(((size_t)3 << 20) / 2 / 2048) };   /* 1.5 MiB of 2 KiB */
static void *ls_p[LS_N];

static void *lifo_small_thread(void *arg) {
  (void)arg;
  T_FREE(T_MALLOC(16));
  mth_heap_t *heap = mth_tls_heap;
  size_t bin = mth_bin_of(LS_SMALL);
  mth_page_t *c = &heap->bcache[bin - MTH_BCACHE_BIN0];
  /* below the bound: a few full pages of 2 KiB (16 a slice, 32 a page), the cache stays unused */
  int n = 0;
  while (n < 3 * 32) TCHECK((ls_p[n++] = T_MALLOC(LS_SMALL)) != NULL);
  TCHECKF(!heap->lifo && heap->small_bytes < MTH_LIFO_BYTES, "%zu bytes of small blocks carved "
          "and the heap already counts as large", heap->small_bytes);
  void *freed = ls_p[5];
  T_FREE(freed);
  TCHECKF(mth_bcache_count(c) == 0, "%s", "a small heap's free into a full page went to the cache");
  TCHECK((ls_p[5] = T_MALLOC(LS_SMALL)) != NULL);
  /* above it */
  while (n < LS_N) {
    TCHECK((ls_p[n] = T_MALLOC(LS_SMALL)) != NULL);
    th_fill_seed(ls_p[n], LS_SMALL, 900 + (uint64_t)n);
    n++;
  }
  TCHECKF(heap->lifo, "%zu bytes of small blocks carved (bound %zu) and the heap does not count "
          "as large", heap->small_bytes, MTH_LIFO_BYTES);
  for (int round = 0; round < 8; round++) {
    int k = 200 + round * 37;   /* blocks of full pages, a different one each round */
    mth_page_t *page = mth_page_of(mth_segment_of(ls_p[k]), ls_p[k]);
    TCHECKF(page->used == page->reserved, "setup: block %d's page is not full", k);
    freed = ls_p[k];
    T_FREE(freed);
    ls_p[k] = T_MALLOC(LS_SMALL);
    TCHECKF(ls_p[k] == freed, "round %d: the block just freed into a full page (%p) was not the "
            "next malloc of its class (got %p)", round, freed, ls_p[k]);
    th_fill_seed(ls_p[k], LS_SMALL, 900 + (uint64_t)k);
  }
  /* a full page that another thread freed a block into for an absent owner (inbox.c; here the
   * owner itself, holding its lock): its frees go to the slow path from then on, which puts it
   * back in its queue with them instead of leaving its free blocks to wait behind the cache */
  {
    int k = 700;   /* its page filled after the heap grew past the bound */
    mth_page_t *page = mth_page_of(mth_segment_of(ls_p[k]), ls_p[k]);
    TCHECKF(page->used == page->reserved && page->flags == MTH_PAGE_FULL && page->owner == heap &&
            page->list == c, "setup: block %d's page is not full with its frees going to the cache", k);
    mth_heap_enter(heap);
    TCHECK(mth_page_free_for(heap, page, (mth_block_t *)ls_p[k]));
    mth_heap_leave(heap);
    ls_p[k] = NULL;
    TCHECKF(page->owner == NULL && page->flags == MTH_PAGE_FULL, "a full page that got a block "
            "back for an absent owner still sends its frees to the cache (owner %p)", (void *)page->owner);
    size_t cached = mth_bcache_count(c);
    int j = k + 1;
    TCHECK(mth_page_of(mth_segment_of(ls_p[j]), ls_p[j]) == page);
    T_FREE(ls_p[j]);
    ls_p[j] = NULL;
    TCHECKF(page->flags == 0 && page->owner == heap && page->list == page && mth_bcache_count(c) == cached &&
            page->used + 2u == page->reserved, "the owner's next free into it left it full (flags %u) "
            "or went to the cache (%zu cached, %zu before)", page->flags, mth_bcache_count(c), cached);
  }
  /* a burst of frees into full pages: the cache keeps its bound, the rest go to their pages */
  uint64_t live0 = 0;
  {
    struct mtheap_stats st;
    th_stats(&st);
    for (int i = 0; i < MTHEAP_NUM_CLASSES; i++)
      if (st.classes[i].block_size == LS_SMALL) live0 = st.classes[i].mallocs - st.classes[i].frees;
  }
  enum { BURST = 200 };
  for (int i = 0; i < BURST; i++) {
    int k = 100 + i * 2;
    th_verify_seed(ls_p[k], LS_SMALL, LS_SMALL, 900 + (uint64_t)k);
    T_FREE(ls_p[k]);
    ls_p[k] = NULL;
  }
  size_t cap = ((size_t)64 << 10) / LS_SMALL;   /* README: 64 KiB a class up to 8 KiB */
  TCHECKF(mth_bcache_count(c) > 0 && mth_bcache_count(c) <= cap, "%zu blocks of 2 KiB cached after %d "
          "frees into full pages (bound %zu)", mth_bcache_count(c), BURST, cap);
  struct mtheap_stats st;
  th_stats(&st);
  for (int i = 0; i < MTHEAP_NUM_CLASSES; i++)
    if (st.classes[i].block_size == LS_SMALL)
      TCHECKF(st.classes[i].mallocs - st.classes[i].frees == live0 - BURST, "statistics: %" PRIu64
              " blocks of 2 KiB live, expected %" PRIu64 " (cached blocks are free)",
              st.classes[i].mallocs - st.classes[i].frees, live0 - BURST);
  for (int i = 0; i < LS_N; i++)
    if (ls_p[i]) {
      if (i >= 3 * 32) th_verify_seed(ls_p[i], LS_SMALL, LS_SMALL, 900 + (uint64_t)i);
      T_FREE(ls_p[i]);
    }
  mtheap_collect(true);
  TCHECKF(heap->small_bytes == 0 && !heap->lifo && class_pages(LS_SMALL) == 0, "after every block "
          "was freed and collected: %zu bytes of small blocks counted, %" PRIu64 " pages of 2 KiB",
          heap->small_bytes, class_pages(LS_SMALL));
  return NULL;
}

static void case_lifo_small(void) { in_new_thread(lifo_small_thread); }

enum { BC_N = 2000 };
#define BC_SIZE ((size_t)16384)
static void *bc_blocks[BC_N];

static void bc_fill(void) {
  for (int i = 0; i < BC_N; i++) {
    TCHECK((bc_blocks[i] = T_MALLOC(BC_SIZE)) != NULL);
    th_fill_seed(bc_blocks[i], BC_SIZE, 700 + (uint64_t)i);
  }
}

static void bc_free(int from, int step) {
  th_rng_t r = th_rng(77 + (uint64_t)from);
  int idx[BC_N], n = 0;
  for (int i = from; i < BC_N; i += step) idx[n++] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)th_below(&r, (uint64_t)i + 1), t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
  }
  for (int i = 0; i < n; i++) {
    th_verify_seed(bc_blocks[idx[i]], BC_SIZE, BC_SIZE, 700 + (uint64_t)idx[i]);
    T_FREE(bc_blocks[idx[i]]);
  }
}

static void *bc_free_odd(void *arg) {
  bc_free(1, 2);
  return NULL;
}

static uint64_t class_live(size_t block_size) {
  struct mtheap_stats st;
  th_stats(&st);
  for (int i = 0; i < MTHEAP_NUM_CLASSES; i++)
    if (st.classes[i].block_size == block_size) return st.classes[i].mallocs - st.classes[i].frees;
  return 0;
}

static void case_bcache_bound(void) {
  bc_fill();
  pthread_t t;
  th_thread(&t, bc_free_odd, NULL);   /* remote frees: drained into the owner's cache or pages */
  bc_free(0, 2);
  th_join(t);
  mtheap_collect(false);              /* takes the remote frees in */
  uint64_t pages = class_pages(BC_SIZE), live = class_live(BC_SIZE);
  /* the class's own 2 MiB and all of the heap's 8 MiB it may borrow, at most MTH_BCACHE_DEPTH */
  size_t most = (MTH_BCACHE_CLASS_BYTES + MTH_BCACHE_EXTRA_BYTES) / BC_SIZE;
  size_t cap = most < MTH_BCACHE_DEPTH ? most : MTH_BCACHE_DEPTH;
  TCHECKF(pages <= cap + MTH_RETIRED_MAX, "%" PRIu64 " pages of 16 KiB blocks kept with none live "
          "(bound: %zu pinned by the cache's blocks, %d in the ring)", pages, cap, MTH_RETIRED_MAX);
  TCHECKF(live == 0, "%" PRIu64 " blocks of 16 KiB counted live after all were freed (cached blocks are free)", live);
  /* allocated again, from the cache first: every block intact and distinct */
  bc_fill();
  for (int i = 0; i < BC_N; i++) th_verify_seed(bc_blocks[i], BC_SIZE, BC_SIZE, 700 + (uint64_t)i);
  bc_free(0, 1);
  mtheap_collect(true);
  TCHECKF(class_pages(BC_SIZE) == 0, "%" PRIu64 " pages of 16 KiB blocks after mtheap_collect(true)", class_pages(BC_SIZE));
}

/* The idle loops below (slow-path work and a 1 ms sleep per round) wait for memory that the
 * ticks give back: 2 s, but at least 1500 rounds, since a loaded machine stretches the sleeps
 * while the bounds are in ticks (MTH_RETIRED_TICKS: the ring's pages go after 1024). */
static bool idle_too_long(uint64_t t0, int iter) { return th_now_ms() - t0 >= 2000 && iter >= 1500; }

static void case_bcache_scavenge(void) {
  bc_fill();
  bc_free(0, 1);
  uint64_t t0 = th_now_ms(), pages = class_pages(BC_SIZE);
  for (int iter = 0; pages > 0; iter++) {
    TCHECKF(!idle_too_long(t0, iter), "%" PRIu64 " pages of 16 KiB blocks still kept 2 s after the last free, "
            "with the slow path ticking", pages);
    batch(200000, 2, 5);   /* large spans: the slow path, which runs the tick */
    th_sleep_ms(1);
    pages = class_pages(BC_SIZE);
  }
}

static void *bc_thread(void *arg) {
  bc_fill();
  bc_free(0, 1);
  return NULL;
}

static void case_bcache_exit(void) {
  pthread_t t;
  th_thread(&t, bc_thread, NULL);
  th_join(t);
  TCHECKF(class_pages(BC_SIZE) == 0, "%" PRIu64 " pages of 16 KiB blocks left by a thread that exited",
          class_pages(BC_SIZE));
}

/* One block of each of 20 classes above 8 KiB, malloc'ed and freed in turn, in a new thread
 * (python3's start reads a file per module into such a buffer): each class's page empties into
 * the retired ring, and the next class's page would take fresh slices; the ring gives its
 * pages back first (mth_pages_give_back_kept), so the spans the thread holds at once stay near
 * one page's length.  Before, the ring held the 19 earlier pages. */
static void *kept_thread(void *arg) {
  (void)arg;
  size_t before = spans_now(), most = 0;
  for (int i = 0; i < 20; i++) {
    size_t size = 10000 + (size_t)i * 5000;
    unsigned char *p = T_MALLOC(size);
    TCHECK(p != NULL);
    memset(p, 0x11, size);
    size_t now = spans_now() - before;
    if (now > most) most = now;
    T_FREE(p);
  }
  printf("most spans held at once: %zu KiB\n", most >> 10);
  TCHECKF(most <= (size_t)512 << 10, "%zu KiB of spans held at once for one live block at a time", most >> 10);
  return NULL;
}

static void case_kept(void) {
  pthread_t t;
  th_thread(&t, kept_thread, NULL);
  th_join(t);
}

/* Loans past a class's own 2 MiB (bcache.c: mth_bcache_grow).  A burst of 100 blocks of 64 KiB
 * (6.4 MiB) freed and allocated again is served by the cache and the pages it keeps: no span
 * taken from or given back to the segments (without loans, 68 of the frees went to pages that
 * emptied and left).  Bursts in six classes at once: what the caches hold stays within their
 * own caps plus MTH_BCACHE_EXTRA_BYTES, and so do the loans; left idle, every loan comes back
 * with the blocks (the scavenge) and the classes keep no page. */
static size_t loan_held_bytes(mth_heap_t *heap, size_t *own) {
  size_t held = 0;
  *own = 0;
  for (size_t k = 0; k < MTH_BCACHE_BINS; k++) {
    const mth_page_t *c = &heap->bcache[k];
    if (c->flags == 0) continue;
    size_t base = MTH_BCACHE_CLASS_BYTES / c->block_size;
    if (base > MTH_BCACHE_DEPTH) base = MTH_BCACHE_DEPTH;
    held += mth_bcache_count(c) * c->block_size;
    *own += base * c->block_size;
  }
  return held;
}

static void case_bcache_loan(void) {
  enum { N = 100 };
  void *b[6][N];
  for (int round = 0; round < 3; round++) {
    struct mtheap_stats a, z;
    th_stats(&a);
    for (int i = 0; i < N; i++) {
      TCHECK((b[0][i] = T_MALLOC(65536)) != NULL);
      th_fill_seed(b[0][i], 65536, (uint64_t)round * N + (uint64_t)i);
    }
    for (int i = 0; i < N; i++) {
      th_verify_seed(b[0][i], 65536, 65536, (uint64_t)round * N + (uint64_t)i);
      T_FREE(b[0][i]);
    }
    th_stats(&z);
    printf("round %d of 100 x 64 KiB: %" PRIu64 " span operations\n", round, z.span_ops - a.span_ops);
    if (round > 0)
      TCHECKF(z.span_ops == a.span_ops, "round %d of 100 mallocs and frees of 64 KiB took %" PRIu64
              " span operations: the burst did not stay in the cache and its pages", round, z.span_ops - a.span_ops);
  }
  mth_heap_t *heap = mth_tls_heap;
  static const size_t sizes[6] = {40960, 57344, 65536, 81920, 98304, 131072};
  for (int s = 0; s < 6; s++)
    for (int i = 0; i < N; i++) TCHECK((b[s][i] = T_MALLOC(sizes[s])) != NULL);
  for (int i = 0; i < N; i++)
    for (int s = 0; s < 6; s++) T_FREE(b[s][i]);
  size_t own, held = loan_held_bytes(heap, &own);
  printf("six bursts: caches hold %zu KiB, own caps %zu KiB, lent %zu KiB\n", held >> 10, own >> 10,
         heap->bcache_extra >> 10);
  TCHECKF(heap->bcache_extra <= MTH_BCACHE_EXTRA_BYTES, "%zu bytes lent, more than %zu", heap->bcache_extra,
          (size_t)MTH_BCACHE_EXTRA_BYTES);
  TCHECKF(held <= own + MTH_BCACHE_EXTRA_BYTES, "caches hold %zu bytes: more than their caps (%zu) and the loans",
          held, own);
  TCHECKF(heap->bcache_extra > 0, "%s", "no cache borrowed anything in six bursts of 4-13 MiB");
  /* idle: other work only, which ticks */
  uint64_t t0 = th_now_ms();
  for (int iter = 0; heap->bcache_extra != 0 || class_pages(65536) != 0; iter++) {
    TCHECKF(!idle_too_long(t0, iter), "2 s idle: %zu bytes still lent, %" PRIu64 " pages of 64 KiB kept",
            heap->bcache_extra, class_pages(65536));
    batch(200000, 2, 7);   /* large spans: the slow path, which runs the tick */
    th_sleep_ms(1);
  }
}

/* Freed large spans kept for reuse (src/page.c, heap->lcache): the next large malloc of that
 * length takes the span back without a span operation, calloc's copy is zeroed, a span a
 * little longer serves (its surplus given back), the cache keeps its bounds, and it empties
 * when idle and on mtheap_collect(true). */
static uint64_t span_ops_now(void) {
  struct mtheap_stats st;
  th_stats(&st);
  return st.span_ops;
}

static void case_lcache(void) {
  mth_heap_t *heap;
  T_FREE(T_MALLOC(16));
  heap = mth_tls_heap;
  unsigned char *p = T_MALLOC(200000);
  TCHECK(p != NULL);
  memset(p, 0x5a, 200000);
  T_FREE(p);
  uint64_t ops = span_ops_now();
  unsigned char *q = T_MALLOC(200000);
  TCHECKF(q == p && span_ops_now() == ops, "malloc(200000) after freeing one: %p (freed %p), %" PRIu64
          " span operations", (void *)q, (void *)p, span_ops_now() - ops);
  T_FREE(q);
  unsigned char *z = T_CALLOC(1, 200000);
  TCHECKF(z == p, "%s", "calloc(1, 200000) did not take the kept span");
  for (size_t i = 0; i < 200000; i++)
    if (z[i] != 0) TFAIL("calloc from a kept span: byte %zu is 0x%02x", i, z[i]);
  T_FREE(z);
  /* 10 slices kept, 9 asked for: taken, and one slice given back */
  unsigned char *a = T_MALLOC((size_t)10 * MTH_SLICE_SIZE);
  TCHECK(a != NULL);
  T_FREE(a);
  unsigned char *b = T_MALLOC((size_t)9 * MTH_SLICE_SIZE - 100);
  TCHECKF(b == a, "%s", "a span one slice longer was not taken");
  TCHECKF(T_USABLE_SIZE(b) == (size_t)9 * MTH_SLICE_SIZE, "usable size %zu of the shortened span, expected %zu",
          T_USABLE_SIZE(b), (size_t)9 * MTH_SLICE_SIZE);
  T_FREE(b);
  /* bounds: twelve freed large blocks, at most MTH_LCACHE_MAX kept and MTH_LCACHE_SLICES */
  void *m[12];
  for (int i = 0; i < 12; i++) TCHECK((m[i] = T_MALLOC(600000)) != NULL);
  for (int i = 0; i < 12; i++) T_FREE(m[i]);
  printf("kept %u spans, %u slices\n", heap->lcache_n, heap->lcache_slices);
  TCHECKF(heap->lcache_n <= MTH_LCACHE_MAX && heap->lcache_slices <= MTH_LCACHE_SLICES,
          "%u spans of %u slices kept", heap->lcache_n, heap->lcache_slices);
  TCHECK(heap->lcache_n > 0);
  /* idle (other work on the slow path, which ticks): the kept spans go back */
  uint64_t t0 = th_now_ms();
  for (int iter = 0; heap->lcache_n != 0; iter++) {
    TCHECKF(!idle_too_long(t0, iter), "%u large spans still kept after 2 s idle", heap->lcache_n);
    batch((size_t)2 << 20, 1, 3);   /* huge blocks: the slow path, which runs the tick */
    th_sleep_ms(1);
  }
  for (int i = 0; i < 4; i++) TCHECK((m[i] = T_MALLOC(600000)) != NULL);
  for (int i = 0; i < 4; i++) T_FREE(m[i]);
  TCHECK(heap->lcache_n > 0);
  mtheap_collect(true);
  TCHECKF(heap->lcache_n == 0, "%u large spans kept after mtheap_collect(true)", heap->lcache_n);
}

/* 100 mallocs then 100 frees of 9 KiB blocks, a few rounds: pages of seven blocks, so the
 * class's last page is never full and keeps room to carve.  Once the frees filled the cache,
 * a round's mallocs must come from it on the fast path: heap->ticks counts the slow-path calls
 * (every one runs the tick).  Before the fix every malloc served from the cache was a slow
 * call, since direct[] kept naming the page in front, which had no free block: 180 instructions
 * a block (bench/hotpath.py) against 82 for 12 KiB blocks, whose pages filled exactly. */
static void case_bcache_direct(void) {
  enum { N = 100, SIZE = 9216 };
  void *b[N];
  mth_heap_t *heap = NULL;
  uint32_t worst = 0;
  for (int round = 0; round < 6; round++) {
    if (!heap) {
      T_FREE(T_MALLOC(16));   /* the thread's heap exists from here on */
      heap = mth_tls_heap;
    }
    uint32_t t0 = heap->ticks;
    for (int i = 0; i < N; i++) {
      TCHECK((b[i] = T_MALLOC(SIZE)) != NULL);
      th_fill_seed(b[i], SIZE, (uint64_t)round * N + (uint64_t)i);
    }
    uint32_t slow = heap->ticks - t0;
    for (int i = 0; i < N; i++) {
      th_verify_seed(b[i], SIZE, SIZE, (uint64_t)round * N + (uint64_t)i);
      T_FREE(b[i]);
    }
    printf("round %d: %u slow-path mallocs of %d\n", round, slow, N);
    if (round >= 2 && slow > worst) worst = slow;
  }
  TCHECKF(worst <= N / 4, "%u of %d mallocs took the slow path in a round that the block cache serves", worst, N);
}

static void drain_class(size_t size) {
  enum { W = 640, ROUNDS = 100000 };
  static void *p[W];
  uint64_t x = 0x9e3779b97f4a7c15ull ^ size;
#define DRAIN_NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
  uint64_t before = class_pages(size);
  for (int i = 0; i < W; i++) {
    p[i] = T_MALLOC(size);
    TCHECK(p[i] != NULL);
    th_fill_seed(p[i], size, (uint64_t)(uintptr_t)&p[i]);
  }
  uint64_t full = class_pages(size) - before;
  int live = 0;
  for (int i = 0; i < W; i++) {
    if (DRAIN_NEXT() & 1) {
      T_FREE(p[i]);
      p[i] = NULL;
    } else {
      live++;
    }
  }
  for (int r = 0; r < ROUNDS; r++) {
    int k, j;
    do k = (int)(DRAIN_NEXT() % W); while (!p[k]);
    th_verify_seed(p[k], size, size, (uint64_t)(uintptr_t)&p[k]);
    T_FREE(p[k]);
    p[k] = NULL;
    do j = (int)(DRAIN_NEXT() % W); while (p[j]);
    p[j] = T_MALLOC(size);
    TCHECK(p[j] != NULL);
    th_fill_seed(p[j], size, (uint64_t)(uintptr_t)&p[j]);
  }
#undef DRAIN_NEXT
  uint64_t now = class_pages(size) - before;
  uint64_t bound = (full * (uint64_t)live + W - 1) / W + 2;
  TCHECKF(now <= bound, "%zu-byte blocks: %d of %d live after %d replacements keep %llu pages "
          "(%llu held all %d; at most %llu expected): sparse pages are refilled instead of "
          "emptying", size, live, (int)W, (int)ROUNDS, (unsigned long long)now,
          (unsigned long long)full, (int)W, (unsigned long long)bound);
  printf("drain %zu: %d of %d live, %llu pages (all live: %llu)\n", size, live, (int)W,
         (unsigned long long)now, (unsigned long long)full);
  for (int i = 0; i < W; i++)
    if (p[i]) {
      th_verify_seed(p[i], size, size, (uint64_t)(uintptr_t)&p[i]);
      T_FREE(p[i]);
    }
}

static void case_drain(void) {
  drain_class(256);
  drain_class(1024);
  drain_class(4096);
}

/* 15 spans of four 16 KiB blocks (a slice each: MTH_SPREAD_MIN) fill 60 of a segment's 63 slices */
enum { NS_N = 2 * 15 * 4 };
static void *ns_blocks[NS_N];

static void *newseg_thread(void *arg) {
  (void)arg;
  for (int i = 0; i < NS_N; i++) {
    TCHECK((ns_blocks[i] = T_MALLOC(16384)) != NULL);
    th_fill_seed(ns_blocks[i], 16384, 900 + (uint64_t)i);
  }
  uintptr_t seg[NS_N];
  int nseg = 0;
  for (int i = 0; i < NS_N; i++) {
    uintptr_t s = (uintptr_t)ns_blocks[i] & ~(uintptr_t)MTH_SEG_MASK;
    int k = 0;
    while (k < nseg && seg[k] != s) k++;
    if (k == nseg) seg[nseg++] = s;
  }
  TCHECKF(nseg == 2, "%d blocks of 16 KiB in a new thread lie in %d segments, not 2", (int)NS_N, nseg);
  for (int i = 0; i < NS_N; i++) {
    th_verify_seed(ns_blocks[i], 16384, 16384, 900 + (uint64_t)i);
    T_FREE(ns_blocks[i]);
  }
  size_t big = (size_t)1 << 20;
  uint8_t *p = T_MALLOC(big);
  TCHECK(p != NULL);
  uintptr_t s = (uintptr_t)p & ~(uintptr_t)MTH_SEG_MASK;
  TCHECKF(s == seg[0] || s == seg[1], "the 1 MiB block went to a new segment (%p) while the "
          "thread's two segments (%p, %p) held only cached free blocks", (void *)s,
          (void *)seg[0], (void *)seg[1]);
  th_fill_seed(p, big, 77);
  th_verify_seed(p, big, big, 77);
  T_FREE(p);
  return NULL;
}

static void case_bcache_newseg(void) { in_new_thread(newseg_thread); }

/* Borrowing (src/lend.c): a thread that starts while another holds free resident slices
 * takes its spans there instead of in a fresh segment.  The lender frees six 256 KiB blocks
 * (one span stays kept, 40 slices are free and resident) and waits; a new thread's first
 * blocks, large and small, must land in the lender's segment as pages of the new thread's
 * own: a free from a third thread goes to the borrower's inbox, not the lender's.  Emptied,
 * the span goes back to the lender's segment (its slices free again); with the lender's lock
 * held elsewhere it waits on the lender's spans_back, still taken, until the lender's next
 * tick takes it back.  The report counts the spans. */
static struct {
  sem_t lent, borrowed, freed, b_ready, lock_taken, b_checked, lock_free, taken_back, b_done;
  mth_heap_t *lender, *borrower;
  mth_segment_t *seg;
  void *small;
} bw;

static bool bw_slice_used(mth_segment_t *seg, const void *p) {
  size_t k = ((uintptr_t)p - (uintptr_t)seg) >> MTH_SLICE_SHIFT;
  return (__atomic_load_n(&seg->used_mask, __ATOMIC_RELAXED) >> k) & 1;
}

/* heap->idle_slices and the global count against a recount from the segments' masks */
static void bw_idle_seg(mth_segment_t *seg, void *arg) {
  if (seg->kind == MTH_SEG_SPANS) *(uint64_t *)arg += (uint64_t)__builtin_popcountll(seg->dirty_mask & ~seg->used_mask);
}
static void bw_idle_heap(mth_heap_t *h, void *arg) { *(uint64_t *)arg += h->idle_slices; }
static void bw_check_idle(void) {
  uint64_t masks = 0, heaps = 0;
  mth_arena_visit(bw_idle_seg, &masks);
  mth_heaps_visit(bw_idle_heap, &heaps);
  uint64_t all = atomic_load(&mth_gstats.idle_slices);
  printf("idle slices: %" PRIu64 " by the masks, %" PRIu64 " by the heaps, %" PRIu64 " in all\n", masks, heaps, all);
  TCHECKF(masks == heaps && heaps == all, "idle slices: %" PRIu64 " by the masks, %" PRIu64 " by the heaps, %"
          PRIu64 " in all", masks, heaps, all);
}

static void *bw_lender(void *arg) {
  (void)arg;
  void *p[6];
  for (int i = 0; i < 6; i++) TCHECK((p[i] = T_MALLOC(256 << 10)) != NULL);
  bw.lender = mth_tls_heap;
  bw.seg = mth_segment_of(p[0]);
  TCHECKF(bw.seg->heap == bw.lender, "%s", "the lender's first blocks are not in a segment of its own");
  for (int i = 0; i < 6; i++) T_FREE(p[i]);
  sem_post(&bw.lent);
  sem_wait(&bw.lock_free);   /* the borrower's second span went to our spans_back meanwhile */
  mtheap_collect(false);      /* a tick: takes it back */
  sem_post(&bw.taken_back);
  sem_wait(&bw.b_done);       /* alive until checked: its exit would take it back too */
  return NULL;
}

static void *bw_borrower(void *arg) {
  (void)arg;
  sem_wait(&bw.lent);
  /* no malloc before these: this thread has no segment of its own */
  uint8_t *big = T_MALLOC(256 << 10);
  uint8_t *small = T_MALLOC(4000);
  TCHECK(big && small);
  mth_heap_t *me = mth_tls_heap;
  bw.borrower = me;
  mth_page_t *bp = mth_page_of(mth_segment_of(big), big), *sp = mth_page_of(mth_segment_of(small), small);
  TCHECKF(mth_segment_of(big) == bw.seg && mth_segment_of(small) == bw.seg,
          "a new thread's first blocks (%p, %p) are not in the lender's segment %p, which had 40 "
          "free resident slices", (void *)big, (void *)small, (void *)bw.seg);
  TCHECKF(bp->home == me && sp->home == me, "%s", "borrowed spans do not name the borrower as their heap");
  th_fill_seed(big, 256 << 10, 41);
  th_fill_seed(small, 4000, 42);
  bw.small = T_MALLOC(4000);   /* the next block of the same page, for another thread to free */
  TCHECK(mth_page_of(mth_segment_of(bw.small), bw.small) == sp);
  sem_post(&bw.borrowed);
  sem_wait(&bw.freed);
  TCHECKF(atomic_load(&me->inbox_n) == 1 && atomic_load(&bw.lender->inbox_n) == 0,
          "another thread's free of a block on borrowed slices: borrower's inbox %" PRIu64
          ", lender's %" PRIu64 " (want 1 and 0)", atomic_load(&me->inbox_n), atomic_load(&bw.lender->inbox_n));
  th_verify_seed(big, 256 << 10, 256 << 10, 41);
  th_verify_seed(small, 4000, 4000, 42);
  T_FREE(big);
  T_FREE(small);
  mtheap_collect(true);   /* the kept large span and the empty page go */
  TCHECKF(!bw_slice_used(bw.seg, big) && !bw_slice_used(bw.seg, small),
          "%s", "emptied borrowed spans did not go back to the lender's segment");
  bw_check_idle();
  /* again, with the lender's lock taken by another thread: the span waits on its list */
  uint8_t *again = T_MALLOC(256 << 10);
  TCHECK(again != NULL && mth_segment_of(again) == bw.seg);
  sem_post(&bw.b_ready);     /* main: take the lender's lock */
  sem_wait(&bw.lock_taken);
  T_FREE(again);
  mtheap_collect(true);
  mth_page_t *ap = mth_page_of(bw.seg, again);
  TCHECKF(bw_slice_used(bw.seg, again) && atomic_load(&bw.lender->spans_back) == ap &&
          (ap->flags & MTH_PAGE_UNUSED),
          "%s", "a span given back while the lender's lock was taken is not on its spans_back, "
          "slices still used, marked free");
  sem_post(&bw.b_checked);   /* main: let go of the lock; the lender then ticks */
  sem_wait(&bw.taken_back);
  TCHECKF(!bw_slice_used(bw.seg, again) && atomic_load(&bw.lender->spans_back) == NULL,
          "%s", "the lender's tick did not take back the span on its spans_back");
  sem_post(&bw.b_done);
  return NULL;
}

static uint64_t bw_reported(void) { return th_report_count("spans on other heaps' free slices "); }

static void case_borrow(void) {
  mtheap_collect(true);   /* the main thread's own free slices purged: the lender's are the only ones */
  sem_t *sems[] = {&bw.lent, &bw.borrowed, &bw.freed, &bw.b_ready, &bw.lock_taken, &bw.b_checked,
                   &bw.lock_free, &bw.taken_back, &bw.b_done};
  for (size_t i = 0; i < sizeof sems / sizeof sems[0]; i++) sem_init(sems[i], 0, 0);
  uint64_t before = bw_reported();
  pthread_t l, b;
  th_thread(&l, bw_lender, NULL);
  th_thread(&b, bw_borrower, NULL);
  sem_wait(&bw.borrowed);
  T_FREE(bw.small);   /* a remote free */
  sem_post(&bw.freed);
  sem_wait(&bw.b_ready);
  TCHECK(mth_heap_try_enter_for(bw.lender));
  sem_post(&bw.lock_taken);
  sem_wait(&bw.b_checked);
  mth_heap_leave_for(bw.lender);
  sem_post(&bw.lock_free);
  th_join(b);
  th_join(l);
  uint64_t n = bw_reported() - before;
  printf("spans borrowed: %" PRIu64 "\n", n);
  bw_check_idle();
  TCHECKF(n >= 3, "the report counts %" PRIu64 " borrowed spans, 3 were taken", n);
}

/* ---- trigger: free's fast path pushes onto the list its block's slice names, a page's or its
 * class's block cache's, and calls out when used reaches 0 (src/alloc.h, src/bcache.c); a
 * wrong list or a cache whose used may pass 0 loses blocks or leaves a cache unbounded. */

/* Every span of the heap's segments with our tag: each slice names the page itself when the
 * page has room, its class's cache (set up) when it is full. */
static void tr_check_segments(mth_heap_t *heap, mth_segment_t *seg, int *pages, int *cached) {
  for (; seg; seg = seg->next)
    for (size_t k = 1; k < MTH_SLICES; k++) {
      mth_page_t *page = &seg->pages[k];
      if (!(seg->used_mask >> k & 1) || seg->span_of[k] != mth_span_of_slice(k) ||
          mth_page_unused(page, page->flags))
        continue;
      if (page->owner != heap) {
        TCHECKF(page->owner == NULL, "a page of %u-byte blocks carries another heap's tag", page->block_size);
        continue;
      }
      mth_page_t *want = page;
      if (page->flags == 0) {
        (*pages)++;
      } else {
        TCHECKF(page->flags == MTH_PAGE_FULL && mth_bcache_used(heap, page->bin),
                "a page of %u-byte blocks (flags %u) has our tag, and its class no cache", page->block_size,
                page->flags);
        want = mth_bcache_of(heap, page->bin);
        (*cached)++;
      }
      size_t n = page->bin == MTH_BIN_LARGE ? 1 : page->slice_count;
      for (size_t j = 0; j < n; j++)
        TCHECKF(page[j].owner == heap && page[j].list == want,
                "slice %zu of a page of %u-byte blocks (flags %u): owner %p list %p, expected %p %p", j,
                page->block_size, page->flags, (void *)page[j].owner, (void *)page[j].list, (void *)heap,
                (void *)want);
    }
}

/* Every cache set up: within its cap, its trip count at most the cap + 1 and its used at least
 * 1 (the next push must not pass 0), its next itself (so that free's test calls out), and
 * with no scavenge scheduled, its first block trips. */
static void tr_check_caches(mth_heap_t *heap) {
  for (size_t k = 0; k < MTH_BCACHE_BINS; k++) {
    mth_page_t *c = &heap->bcache[k];
    if (c->flags == 0) continue;
    uint32_t held = c->trip - c->used;
    TCHECKF(held <= c->capacity, "cache of %u-byte blocks holds %u, its cap is %u", c->block_size, held,
            c->capacity);
    TCHECKF(c->used >= 1 && c->trip <= (uint32_t)c->capacity + 1 && c->next == c,
            "cache of %u-byte blocks (cap %u, %u held): trips at %u, used %u, next %p", c->block_size,
            c->capacity, held, c->trip, c->used, (void *)c->next);
    if (heap->bcache_scavenge_ms == 0)
      TCHECKF(c->trip == 1, "no scavenge scheduled, yet the cache of %u-byte blocks trips at %u", c->block_size,
              c->trip);
  }
}

static void *trigger_thread(void *arg) {
  (void)arg;
  enum { W = 3000, STEPS = 60000 };
  static unsigned char *live[W];
  static size_t len[W];
  th_rng_t r = th_rng(77);
  mth_heap_t *heap = mth_tls_heap;
  int pages = 0, cached = 0;
  for (int step = 0; step < STEPS; step++) {
    size_t i = th_below(&r, W);
    if (live[i]) {
      th_verify_seed(live[i], len[i], len[i], (uint64_t)i);
      T_FREE(live[i]);
    }
    /* mostly small, some big (cached classes), now and then a large span */
    uint64_t kind = th_below(&r, 100);
    len[i] = kind < 70 ? th_logsize(&r, 8, 4096) : kind < 99 ? th_logsize(&r, 4097, 65536) : 200000;
    TCHECK((live[i] = T_MALLOC(len[i])) != NULL);
    th_fill_seed(live[i], len[i], (uint64_t)i);
    if (heap == &mth_heap_empty) heap = mth_tls_heap;
    if (step % 5000 == 4999) {
      tr_check_segments(heap, heap->segs_avail, &pages, &cached);
      tr_check_segments(heap, heap->segs_full, &pages, &cached);
      tr_check_caches(heap);
    }
  }
  /* half the window back, at random: pages empty and retire, caches fill to their caps */
  for (size_t i = 0; i < W; i += 2) {
    T_FREE(live[i]);
    live[i] = NULL;
  }
  tr_check_segments(heap, heap->segs_avail, &pages, &cached);
  tr_check_segments(heap, heap->segs_full, &pages, &cached);
  tr_check_caches(heap);
  for (size_t i = 0; i < W; i++) T_FREE(live[i]);
  /* the slow path's frees into full pages (mth_bcache_put), checked after each: a put that
   * brings used to 0 must move the trip count on, or the fast path's next push passes it */
  mtheap_collect(true);
  enum { SLOW = 64 };
  void *q[SLOW];
  for (int i = 0; i < SLOW; i++) TCHECK((q[i] = T_MALLOC(20000)) != NULL);
  mth_page_t *c = mth_bcache_of(heap, mth_bin_of(20000));
  for (int i = 0; i < SLOW; i++) {
    mth_page_t *page = mth_page_of(mth_segment_of(q[i]), q[i]);
    mth_heap_enter(heap);
    mth_page_free_local(heap, page, (mth_block_t *)q[i]);
    mth_heap_leave(heap);
    tr_check_caches(heap);
  }
  TCHECKF(mth_bcache_count(c) >= 16, "the slow path's frees left %zu blocks in the cache", mth_bcache_count(c));
  /* scavenges: the first samples the low-water marks, the second gives back what stayed, and
   * with the caches empty no scavenge is scheduled: every cache trips on its next block */
  for (int round = 0; round < 3 && heap->bcache_scavenge_ms; round++) {
    mth_heap_enter(heap);
    mth_bcache_scavenge(heap, mth_clock_ms());
    mth_heap_leave(heap);
    tr_check_caches(heap);
  }
  TCHECKF(heap->bcache_scavenge_ms == 0 && mth_bcache_count(c) == 0, "scavenges left %zu blocks cached",
          mth_bcache_count(c));
  mtheap_collect(true);
  tr_check_caches(heap);
  printf("checked %d pages with room and %d full pages of cached classes\n", pages, cached);
  TCHECK(pages > 100 && cached > 100);
  return NULL;
}

static void case_trigger(void) { in_new_thread(trigger_thread); }

/* ---- popcount: the span search weighs windows by the resident slices they cover, counted with
 * mth_popcount64 (src/internal.h), which is no libgcc call on the baseline x86-64 */
static void case_popcount(void) {
  static const uint64_t edge[] = {0, 1, ~0ull, 0x8000000000000000ull, 0xffull, 0xff00000000000000ull,
                                  0x5555555555555555ull, 0xaaaaaaaaaaaaaaaaull, 0x0f0f0f0f0f0f0f0full};
  th_rng_t r = th_rng(5);
  for (int i = 0; i < 200000; i++) {
    uint64_t x = i < (int)(sizeof edge / sizeof *edge) ? edge[i] : th_next(&r) & th_next(&r) >> (i % 64);
    int want = 0;
    for (uint64_t y = x; y; y &= y - 1) want++;
    TCHECKF(mth_popcount64(x) == want, "popcount(%#llx) = %d, expected %d", (unsigned long long)x,
            mth_popcount64(x), want);
  }
}

int main(int argc, char **argv) {
  th_require_mtheap_extras();
  th_watchdog(60, "test_pages");
  const char *c = argc > 1 ? argv[1] : "";
  if (!strcmp(c, "reuse")) case_reuse();
  else if (!strcmp(c, "bound")) case_bound();
  else if (!strcmp(c, "expire")) case_expire();
  else if (!strcmp(c, "collect")) case_collect();
  else if (!strcmp(c, "aligned")) case_aligned();
  else if (!strcmp(c, "heartbeat")) case_heartbeat();
  else if (!strcmp(c, "absent")) case_absent();
  else if (!strcmp(c, "absent_back")) case_absent_back();
  else if (!strcmp(c, "absent_adopt")) case_absent_adopt();
  else if (!strcmp(c, "lifo")) case_lifo();
  else if (!strcmp(c, "refill")) case_refill();
  else if (!strcmp(c, "lifo_small")) case_lifo_small();
  else if (!strcmp(c, "carve")) case_carve();
  else if (!strcmp(c, "footprint")) case_footprint();
  else if (!strcmp(c, "spans")) case_spans();
  else if (!strcmp(c, "spread")) case_spread();
  else if (!strcmp(c, "bcache_bound")) case_bcache_bound();
  else if (!strcmp(c, "bcache_scavenge")) case_bcache_scavenge();
  else if (!strcmp(c, "bcache_exit")) case_bcache_exit();
  else if (!strcmp(c, "bcache_direct")) case_bcache_direct();
  else if (!strcmp(c, "bcache_loan")) case_bcache_loan();
  else if (!strcmp(c, "lcache")) case_lcache();
  else if (!strcmp(c, "kept")) case_kept();
  else if (!strcmp(c, "drain")) case_drain();
  else if (!strcmp(c, "bcache_newseg")) case_bcache_newseg();
  else if (!strcmp(c, "borrow")) case_borrow();
  else if (!strcmp(c, "trigger")) case_trigger();
  else if (!strcmp(c, "popcount")) case_popcount();
  else TFAIL("usage: %s reuse|bound|expire|collect|aligned|heartbeat|lifo|lifo_small|refill|carve|footprint|spans|spread|bcache_bound|bcache_scavenge|bcache_exit|bcache_direct|bcache_loan|bcache_newseg|borrow|lcache|kept|drain|trigger|popcount",
             argv[0]);
  printf("test_pages %s: ok\n", c);
  return 0;
}
