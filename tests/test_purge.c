/* Memory goes back to the OS, and the steady state makes no mmap/munmap calls.
 * Usage: test_purge return|fastpath|thread|remote|nommap|reuse|hugekeep|dirtiest|innerhdr|report
 *        (linked with libmtheap.so)
 *
 *   return   ~1 GiB in mixed sizes (mostly 4 KiB..1 MiB, some huge) allocated and freed by
 *            the main thread, which then keeps doing a little malloc/free work every
 *            millisecond: RSS must fall below 10% of its peak within 3 s (the default purge
 *            delay is ~1 s; MTHEAP_PURGE_DELAY_MS is left unset).
 *   fastpath the same, but the work that goes on is 32 blocks of 48 bytes replaced every
 *            millisecond, which never leaves malloc's and free's fast paths (bench rss-return's):
 *            the deadlines must still be looked at often enough (the heartbeat's tick).  With a
 *            look once a second, the caches' scavenge and then the arena's delay left 31% of
 *            the peak resident after 3 s.
 *   thread   the same, but a worker thread allocates and frees the gigabyte and then exits:
 *            an exited thread's free memory must not stay resident for ever.
 *   remote   the main thread allocates the gigabyte, a worker frees all of it and then idles
 *            (alive): blocks freed by another thread must come back to the allocating thread,
 *            and be purged, while it does only small, fast-path work.
 *   nommap   two threads malloc/free 64 KiB..64 MiB blocks; after warm-up, the steady state
 *            makes almost no mmap/munmap calls (mtheap_stats counters).
 *   reuse    a freed huge block's pages stay resident for reuse: a block that fits the hole
 *            takes it unpurged, a bigger block that does not fit goes elsewhere without
 *            purging it (doing so cost `large -i 400` 14-30% in time: the next blocks faulted
 *            in what had just been dropped), and MTH_HUGE_KEEP_MS later it goes back.
 *   hugekeep a freed huge block's slots are purged MTH_HUGE_KEEP_MS after its free, not after
 *            the purge delay, while small-block work goes on.
 *   dirtiest a run of huge slots is taken where the most of it is still resident, not at the
 *            first run that starts on a resident slot.
 *   innerhdr span segments freed to the arena, a huge block over their slots that writes all
 *            but the old segment headers, then calloc from new span segments there: every byte
 *            zero.  The headers left intact said which slices were never written, and a span
 *            segment made in such a slot believed them (fuzz_replay found stale bytes).
 *   report   the statistics report's "free" line says where the memory is that holds no live
 *            block: large spans freed show up as unpurged (heaps' segments or arena) and as
 *            cached (the span a heap keeps), all of it gone after mtheap_collect(true); 100
 *            blocks freed by another thread into a heap whose owner waits are "remote frees
 *            waiting" until the owner takes them in.
 */
#include "testutil.h"
#include <sys/mman.h>

#include "internal.h"   /* the geometry: MTH_SEG_SIZE, MTH_SLICE_SIZE, MTH_LARGE_MAX */

#define GIB ((size_t)1 << 30)

typedef struct { void *p; size_t n; } blk_t;

static size_t peak_rss;
static blk_t *remote_blocks;  /* "remote": handed to a worker to free */
static int remote_n;

static void alloc_free_gib(void) {
  enum { MAXB = 40000 };
  blk_t *b = calloc(MAXB, sizeof *b);
  TCHECK(b != NULL);
  th_rng_t r = th_rng(2024);
  size_t total = 0;
  int nb = 0;
  /* Some huge blocks first (128 MiB in 4..32 MiB), then the bulk in 4 KiB..1 MiB. */
  while (total < ((size_t)128 << 20)) {
    size_t n = th_logsize(&r, 4 << 20, 32 << 20);
    b[nb].p = malloc(n);
    if (!b[nb].p) TFAIL("malloc(%zu) failed", n);
    memset(b[nb].p, 0x33, n);
    b[nb++].n = n;
    total += n;
  }
  while (total < GIB - ((size_t)16 << 20) && nb < MAXB) {
    size_t n = th_logsize(&r, 4096, 1 << 20);
    b[nb].p = malloc(n);
    if (!b[nb].p) TFAIL("malloc(%zu) failed", n);
    memset(b[nb].p, 0x44, n);
    b[nb++].n = n;
    total += n;
  }
  peak_rss = th_rss();
  TCHECKF(peak_rss >= total, "RSS %zu MiB is below the %zu MiB just written", peak_rss >> 20, total >> 20);
  /* Free in a scrambled order, so no allocator can get away with freeing whole runs at once. */
  for (int i = nb - 1; i > 0; i--) {
    int j = (int)th_below(&r, (uint64_t)i + 1);
    blk_t t = b[i]; b[i] = b[j]; b[j] = t;
  }
  printf("allocated %zu MiB in %d blocks; peak RSS %zu MiB\n", total >> 20, nb, peak_rss >> 20);
  if (remote_blocks == (blk_t *)-1) {  /* the caller frees them elsewhere */
    remote_blocks = b;
    remote_n = nb;
    return;
  }
  for (int i = 0; i < nb; i++) free(b[i].p);
  free(b);
}

static _Atomic int remote_state;  /* 1: blocks handed over, 2: all freed, 3: worker may exit */

static void *remote_freer(void *arg) {
  while (atomic_load(&remote_state) != 1) th_sleep_ms(1);
  for (int i = 0; i < remote_n; i++) free(remote_blocks[i].p);
  atomic_store(&remote_state, 2);
  /* Stays alive and idle: whatever it holds back is never handed over by a later free. */
  while (atomic_load(&remote_state) != 3) th_sleep_ms(1);
  return NULL;
}

static void *gib_thread(void *arg) {
  alloc_free_gib();
  return NULL;
}

static void wait_for_return(void) {
  th_rng_t r = th_rng(7);
  uint64_t t0 = th_now_ms();
  size_t rss = th_rss(), target = peak_rss / 10;
  while (rss >= target) {
    if (th_now_ms() - t0 > 3000)
      TFAIL("RSS still %zu MiB 3 s after freeing everything (peak %zu MiB, want < %zu MiB)", rss >> 20,
            peak_rss >> 20, target >> 20);
    /* A program that keeps running: a few small blocks every millisecond. */
    void *p[4];
    for (int i = 0; i < 4; i++) {
      size_t n = th_logsize(&r, 16, 65536);
      p[i] = malloc(n);
      if (!p[i]) TFAIL("malloc(%zu) failed", n);
      memset(p[i], 1, n);
    }
    for (int i = 0; i < 4; i++) free(p[i]);
    th_sleep_ms(1);
    rss = th_rss();
  }
  printf("RSS fell to %zu MiB (peak %zu MiB) after %" PRIu64 " ms\n", rss >> 20, peak_rss >> 20,
         th_now_ms() - t0);
}

static void wait_for_return_fast(void) {
  uint64_t t0 = th_now_ms();
  size_t rss = th_rss(), target = peak_rss / 10;
  void *small[32] = {0};
  while (rss >= target) {
    if (th_now_ms() - t0 > 3000)
      TFAIL("RSS still %zu MiB 3 s after freeing everything, with only fast-path work going on "
            "(peak %zu MiB, want < %zu MiB)", rss >> 20, peak_rss >> 20, target >> 20);
    for (int i = 0; i < 32; i++) {
      free(small[i]);
      small[i] = malloc(48);
      TCHECK(small[i] != NULL);
      memset(small[i], i, 48);
    }
    th_sleep_ms(1);
    rss = th_rss();
  }
  for (int i = 0; i < 32; i++) free(small[i]);
  printf("RSS fell to %zu MiB (peak %zu MiB) after %" PRIu64 " ms of fast-path work\n", rss >> 20,
         peak_rss >> 20, th_now_ms() - t0);
}

/* ------------------------------------------------------------------ nommap */

static _Atomic int phase;  /* 0 warm-up, 1 measured, 2 stop */
static _Atomic int warm_done;

static void *churn_big(void *arg) {
  th_rng_t r = th_rng((uintptr_t)arg + 1);
  uint64_t i = 0;
  blk_t keep[4] = {{0}};
  for (;;) {
    int ph = atomic_load(&phase);
    if (ph == 2) break;
    size_t n = th_logsize(&r, 64 << 10, 64 << 20);
    void *p = malloc(n);
    if (!p) TFAIL("malloc(%zu) failed", n);
    /* Touch a page per 64 KiB: enough to make the block real without spending the time. */
    for (size_t o = 0; o < n; o += 65536) ((volatile char *)p)[o] = 1;
    blk_t *k = &keep[th_below(&r, 4)];
    free(k->p);
    *k = (blk_t){p, n};
    if (++i == 400) atomic_fetch_add(&warm_done, 1);
  }
  for (int k = 0; k < 4; k++) free(keep[k].p);
  return NULL;
}

static void case_nommap(void) {
  pthread_t t[2];
  for (uintptr_t i = 0; i < 2; i++) th_thread(&t[i], churn_big, (void *)i);
  while (atomic_load(&warm_done) < 2) th_sleep_ms(5);
  struct mtheap_stats s0, s1;
  th_stats(&s0);
  /* The steady state spans more than the purge delay, so purging is part of it. */
  th_sleep_ms(2500);
  th_stats(&s1);
  atomic_store(&phase, 2);
  for (int i = 0; i < 2; i++) th_join(t[i]);
  uint64_t mm = s1.mmap_calls - s0.mmap_calls, mu = s1.munmap_calls - s0.munmap_calls;
  uint64_t ops = s1.mallocs - s0.mallocs;
  printf("steady state: %" PRIu64 " mallocs, %" PRIu64 " mmap, %" PRIu64 " munmap, %" PRIu64
         " mremap, %" PRIu64 " madvise calls\n", ops, mm, mu, s1.mremap_calls - s0.mremap_calls,
         s1.madvise_calls - s0.madvise_calls);
  TCHECKF(ops >= 1000, "only %" PRIu64 " mallocs in the steady state", ops);
  TCHECKF(mm + mu <= 8, "%" PRIu64 " mmap + %" PRIu64 " munmap calls for %" PRIu64
          " malloc/free of 64 KiB..64 MiB after warm-up", mm, mu, ops);
}

/* Resident 4 KiB pages of [p, p+n). */
static size_t resident_pages(void *p, size_t n) {
  size_t np = n / 4096, r = 0;
  unsigned char *v = malloc(np);
  TCHECK(v != NULL);
  TCHECK(mincore(p, np * 4096, v) == 0);
  for (size_t i = 0; i < np; i++) r += v[i] & 1;
  free(v);
  return r;
}

static int in_run(const char *p, const char *run, size_t run_size) {
  return p >= run - ((size_t)1 << 20) && p < run + run_size;
}

/* A 3-slot run with one resident slot comes first in the address space, a fully resident one
 * later: a new 3-slot block takes the later one (first fit among runs starting on a resident
 * slot took the first, and faulted in its two purged slots). */
static void case_dirtiest(void) {
  const size_t mib = (size_t)1 << 20;
  free(malloc(16));   /* the thread's span segment exists before the runs are made */
  char *a = malloc(10 * mib), *w1 = malloc(3 * mib), *c = malloc(10 * mib), *w2 = malloc(3 * mib);
  TCHECK(a && w1 && c && w2);
  memset(a, 1, 10 * mib);
  memset(c, 2, 10 * mib);
  TCHECKF(a < c, "the runs should be laid out in order (%p, %p)", (void *)a, (void *)c);
  free(a);
  mtheap_collect(true);   /* a's slots purged: clean */
  size_t left = resident_pages(a, 8 * mib);
  TCHECKF(left == 0, "a's run should be purged by mtheap_collect(true): %zu pages resident", left);
  char *e = malloc(3 * mib);   /* one slot, the first free one: a's first */
  TCHECKF(e != NULL && in_run(e, a, 4 * mib), "a 3 MiB block should take a's first slot (%p, run at %p)",
          (void *)e, (void *)a);
  memset(e, 3, 3 * mib);
  free(e);                     /* a's run: one resident slot, two purged */
  free(c);                     /* c's run: three resident slots */
  char *f = malloc(10 * mib);
  TCHECK(f != NULL);
  TCHECKF(in_run(f, c, 12 * mib), "a 10 MiB block should take the fully resident run at %p, got %p "
          "(the run at %p has two purged slots)", (void *)c, (void *)f, (void *)a);
  free(f);
  free(w1);
  free(w2);
}

static void case_innerhdr(void) {
  const size_t mib = (size_t)1 << 20, slot = MTH_SEG_SIZE;
  free(malloc(16));
  /* span segments with a large block each, freed: back to the arena (one stays cached) with
   * their headers intact */
  enum { NSEG = 6, NCALLOC = 64 };
  char *seg_blocks[NSEG];
  for (int i = 0; i < NSEG; i++) {
    seg_blocks[i] = malloc(MTH_LARGE_MAX);
    TCHECK(seg_blocks[i] != NULL);
    memset(seg_blocks[i], 0x11, MTH_LARGE_MAX);
  }
  for (int i = 0; i < NSEG; i++) free(seg_blocks[i]);
  /* a huge block over those slots writes everything but the first 64 KiB of each slot */
  size_t hsize = (NSEG + 1) * slot;
  char *h = malloc(hsize);
  TCHECK(h != NULL);
  char *run = (char *)((uintptr_t)h & ~(uintptr_t)(slot - 1));
  for (char *sl = run + slot; sl + slot <= h + hsize; sl += slot) memset(sl + 64 * 1024, 0x5a, slot - 64 * 1024);
  free(h);
  /* span segments made in those slots again: large blocks of slices that no header may
   * claim are zero */
  size_t csize = 8 * MTH_SLICE_SIZE - 4096;   /* beyond the size classes, a few slices */
  char *c[NCALLOC];
  int inside = 0;
  for (int i = 0; i < NCALLOC; i++) {
    c[i] = calloc(1, csize);
    TCHECK(c[i] != NULL);
    if (c[i] >= run + slot && c[i] < run + (NSEG + 1) * slot) inside++;
    for (size_t o = 0; o < csize; o += 512)
      if (c[i][o]) TFAIL("calloc(%zu) #%d at %p: byte %zu is 0x%02x, not zero (huge run at %p)", csize,
                         i, (void *)c[i], o, (unsigned char)c[i][o], (void *)run);
  }
  printf("%d of %d calloc'd blocks inside the freed huge run's slots\n", inside, NCALLOC);
  TCHECKF(inside > 0, "no calloc'd block reused the huge run's slots (run at %p, %zu MiB): the case "
          "tests nothing", (void *)run, hsize / mib);
  for (int i = 0; i < NCALLOC; i++) free(c[i]);
}

/* A millisecond of a program that keeps running: four small blocks allocated and freed, so the
 * slow paths' ticks look at the purge deadlines. */
static void small_work_ms(th_rng_t *r) {
  void *p[4];
  for (int i = 0; i < 4; i++) {
    p[i] = malloc(th_logsize(r, 16, 65536));
    TCHECK(p[i] != NULL);
  }
  for (int i = 0; i < 4; i++) free(p[i]);
  th_sleep_ms(1);
}

static void case_reuse(void) {
  const size_t mib = (size_t)1 << 20;
  free(malloc(16));   /* the thread's span segment exists before the hole is made */
  /* a dirty hole of 20 MiB with a live block right behind it */
  char *hole = malloc(20 * mib), *wall = malloc(3 * mib);
  TCHECK(hole != NULL && wall != NULL);
  memset(hole, 0x55, 20 * mib);
  memset(wall, 0x66, 3 * mib);
  free(hole);
  size_t before = resident_pages(hole, 16 * mib);
  TCHECKF(before == 16 * mib / 4096, "the freed block should still be resident (dirty, kept for "
          "reuse) right after free: %zu of %zu pages", before, 16 * mib / 4096);
  /* a block that fits the hole reuses its resident pages */
  char *fits = malloc(12 * mib);
  TCHECK(fits != NULL);
  TCHECKF(fits >= hole - mib && fits < hole + 20 * mib, "a 12 MiB block should reuse the dirty "
          "hole at %p, got %p", (void *)hole, (void *)fits);
  free(fits);
  /* a 40 MiB block does not fit: it goes elsewhere, and the hole stays for the next fit */
  char *big = malloc(40 * mib);
  TCHECK(big != NULL);
  TCHECKF(big > hole + 16 * mib || big + 40 * mib < hole, "40 MiB block %p inside the 20 MiB hole "
          "%p", (void *)big, (void *)hole);
  /* looked at before big is written: all of this takes microseconds, well inside the time a
   * freed huge block's slots are kept (MTH_HUGE_KEEP_MS) */
  size_t kept = resident_pages(hole, 16 * mib);
  TCHECKF(kept == 16 * mib / 4096, "the dirty hole was purged at once (%zu of %zu pages left) "
          "although nothing asked for it", kept, 16 * mib / 4096);
  memset(big, 0x77, 40 * mib);
  /* after MTH_HUGE_KEEP_MS, with the little allocation work of wait_for_return going on, it
   * goes back to the OS (the small blocks' pages may reuse part of the hole meanwhile: what
   * is counted is what was purged) */
  struct mtheap_stats s0, s1;
  th_stats(&s0);
  th_rng_t r = th_rng(11);
  for (int ms = 0; ms < 3000; ms++) {
    small_work_ms(&r);
    th_stats(&s1);
    if (s1.purged - s0.purged >= 12 * mib) break;
  }
  printf("dirty hole of 20 MiB: %zu pages resident after free, %zu after a bigger block went "
         "elsewhere; %zu MiB purged after the delay\n", before, kept, (s1.purged - s0.purged) >> 20);
  TCHECKF(s1.purged - s0.purged >= 12 * mib, "only %zu KiB purged 3 s after a 20 MiB block was freed",
          (s1.purged - s0.purged) >> 10);
  for (size_t i = 0; i < 3 * mib; i += 4096) TCHECK(wall[i] == 0x66);
  free(big);
  free(wall);
}

/* The report's "free" line: unpurged in heaps' segments and in the arena, cached, and remote
 * frees waiting (not in struct mtheap_stats, whose size is the ABI). */
typedef struct { double heaps, arena, cached; long long waiting; } free_line_t;

static double rp_size(const char *s) {
  double v;
  char unit[8];
  if (sscanf(s, "%lf %7s", &v, unit) != 2) TFAIL("no size in '%s'", s);
  if (!strcmp(unit, "B")) return v;
  if (!strcmp(unit, "KiB")) return v * 1024;
  if (!strcmp(unit, "MiB")) return v * 1024 * 1024;
  if (!strcmp(unit, "GiB")) return v * 1024 * 1024 * 1024;
  TFAIL("unit '%s' in '%s'", unit, s);
  return 0;
}

static free_line_t rp_free_line(void) {
  char line[512];
  th_report_line("  free       unpurged: ", line, sizeof line);
  const char *h = strstr(line, "heaps "), *a = strstr(line, "arena "), *c = strstr(line, "cached "),
             *w = strstr(line, "remote frees waiting ");
  TCHECKF(h && a && c && w, "free line: %s", line);
  return (free_line_t){rp_size(h + 6), rp_size(a + 6), rp_size(c + 7), strtoll(w + 21, NULL, 10)};
}

static void *volatile rp_blocks[100];
static atomic_int rp_state;   /* 1: owner allocated; 2: freed by main; 3: owner took them in */

static void *rp_owner(void *arg) {
  (void)arg;
  for (int i = 0; i < 100; i++) TCHECK((rp_blocks[i] = malloc(64)) != NULL);
  atomic_store(&rp_state, 1);
  while (atomic_load(&rp_state) != 2) th_sleep_ms(1);
  mtheap_collect(false);   /* takes its remote frees in */
  atomic_store(&rp_state, 3);
  return NULL;
}

static void case_report(void) {
  enum { N = 16, SZ = 256 << 10 };   /* large spans (over the largest class), 8 slices each */
  mtheap_collect(true);
  free_line_t r0 = rp_free_line();
  TCHECKF(r0.heaps == 0 && r0.arena == 0 && r0.cached == 0, "after collect: heaps %.0f arena %.0f cached %.0f",
          r0.heaps, r0.arena, r0.cached);
  void *b[N];
  for (int i = 0; i < N; i++) {
    TCHECK((b[i] = malloc(SZ)) != NULL);
    memset(b[i], 0x5a, SZ);
  }
  for (int i = 0; i < N; i++) free(b[i]);
  free_line_t r1 = rp_free_line();
  /* one span kept for the next large malloc, the others' slices free and resident until the
   * purge delay: in the heap's segments, or in the arena for a segment that emptied */
  TCHECKF(r1.cached >= SZ, "cached %.0f after freeing %d large blocks", r1.cached, N);
  TCHECKF(r1.heaps + r1.arena >= (double)(N - 1) * SZ, "unpurged: heaps %.0f arena %.0f after freeing %d x %d",
          r1.heaps, r1.arena, N, SZ);
  mtheap_collect(true);
  free_line_t r2 = rp_free_line();
  TCHECKF(r2.heaps == 0 && r2.arena == 0 && r2.cached == 0, "after collect(true): heaps %.0f arena %.0f cached %.0f",
          r2.heaps, r2.arena, r2.cached);

  pthread_t t;
  th_thread(&t, rp_owner, NULL);
  while (atomic_load(&rp_state) != 1) th_sleep_ms(1);
  for (int i = 0; i < 100; i++) free(rp_blocks[i]);
  free_line_t r3 = rp_free_line();
  TCHECKF(r3.waiting == r0.waiting + 100, "remote frees waiting %lld, expected %lld", r3.waiting, r0.waiting + 100);
  atomic_store(&rp_state, 2);
  while (atomic_load(&rp_state) != 3) th_sleep_ms(1);
  free_line_t r4 = rp_free_line();
  TCHECKF(r4.waiting == r0.waiting, "remote frees waiting %lld after the owner took them in, expected %lld",
          r4.waiting, r0.waiting);
  th_join(t);
}

/* A freed huge block is kept for the next huge malloc only briefly: its slots are purged
 * about MTH_HUGE_KEEP_MS after the free, long before the purge delay (1 s), while a little
 * small-block work goes on.  (ruby rebuilding big hashes: peak RSS 252.7 -> 233.5 MiB.) */
static void case_hugekeep(void) {
  const size_t mib = (size_t)1 << 20;
  free(malloc(16));
  char *p = malloc(8 * mib);
  TCHECK(p != NULL);
  memset(p, 0x5a, 8 * mib);
  struct mtheap_stats s0, s1;
  th_stats(&s0);
  uint64_t t0 = th_now_ms();
  free(p);
  th_rng_t r = th_rng(13);
  uint64_t took = 0;
  for (;;) {
    small_work_ms(&r);
    th_stats(&s1);
    took = th_now_ms() - t0;
    if (s1.purged - s0.purged >= 6 * mib || took > 700) break;
  }
  printf("8 MiB huge block: %zu MiB purged %" PRIu64 " ms after its free (kept %d ms, purge "
         "delay 1000 ms)\n", (size_t)((s1.purged - s0.purged) >> 20), took, MTH_HUGE_KEEP_MS);
  TCHECKF(s1.purged - s0.purged >= 6 * mib, "a freed 8 MiB huge block was not purged within %" PRIu64
          " ms (%zu KiB purged): it waits for the 1 s purge delay instead of MTH_HUGE_KEEP_MS",
          took, (size_t)((s1.purged - s0.purged) >> 10));
}

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  th_watchdog(50, c);
  TCHECKF(getenv("MTHEAP_PURGE_DELAY_MS") == NULL, "%s", "the test is about the default purge delay");
  if (!strcmp(c, "return")) {
    alloc_free_gib();
    wait_for_return();
  } else if (!strcmp(c, "fastpath")) {
    alloc_free_gib();
    wait_for_return_fast();
  } else if (!strcmp(c, "thread")) {
    pthread_t t;
    th_thread(&t, gib_thread, NULL);
    th_join(t);
    wait_for_return();
  } else if (!strcmp(c, "remote")) {
    pthread_t t;
    th_thread(&t, remote_freer, NULL);
    remote_blocks = (blk_t *)-1;
    alloc_free_gib();
    atomic_store(&remote_state, 1);
    while (atomic_load(&remote_state) != 2) th_sleep_ms(1);
    wait_for_return();
    atomic_store(&remote_state, 3);
    th_join(t);
    free(remote_blocks);
  } else if (!strcmp(c, "nommap")) {
    case_nommap();
  } else if (!strcmp(c, "reuse")) {
    case_reuse();
  } else if (!strcmp(c, "hugekeep")) {
    case_hugekeep();
  } else if (!strcmp(argv[1], "dirtiest")) {
    case_dirtiest();
  } else if (!strcmp(argv[1], "innerhdr")) {
    case_innerhdr();
  } else if (!strcmp(argv[1], "report")) {
    case_report();
  } else {
    TFAIL("usage: %s return|fastpath|thread|remote|nommap|reuse|hugekeep|dirtiest|innerhdr|report", argv[0]);
  }
  return 0;
}
