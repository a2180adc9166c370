/* Statistics: gathered on demand by walking every segment and heap, so the fast paths pay
 * only one counter decrement per malloc (page->credit).  Readers race with the owners
 * plain writes; the numbers are a snapshot, exact when the program is quiescent.
 *
 * in_use_peak is the highest in_use any snapshot saw, and at least pages_peak's lower bound
 * is not implied: pages_peak (bytes of spans and huge blocks, tracked at every span change) is
 * the exact peak of memory holding live blocks.
 *
 * The report's "free" line says where committed memory is that holds no live block, which is
 * what a peak RSS above the program's own needs is made of: free slices of the heaps'
 * segments and free slots of the arena not yet purged (MTHEAP_PURGE_DELAY_MS; "maybe
 * resident": a slice counts whole though only part of it may have been touched), the
 * per-thread caches (blocks of the block caches, kept empty pages and large spans), and remote
 * frees sent and not yet taken in by their owners (their blocks stay in the owners' pages). */
#include "internal.h"

#include <stdio.h>
#include <unistd.h>

typedef struct {
  struct mtheap_stats *st;
  uint64_t live[MTH_BINS];
  uint64_t pending[MTH_BINS];
  uint64_t live_blocks;
  uint64_t frees_for;         /* remote frees made into an absent owner's pages (inbox.c) */
  uint64_t yields;            /* such drains cut short for the owner, back and waiting */
  uint64_t remote_in;         /* remote frees taken out of inboxes */
  uint64_t borrows, lent_late, lend_rmw;   /* spans on other heaps' free slices (lend.c) */
  size_t unpurged;            /* free slices of span segments that may be resident */
  size_t cached;              /* bytes the heaps' caches hold */
} mth_stats_acc_t;

#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static void mth_stats_segment(mth_segment_t *seg, void *arg) {
  mth_stats_acc_t *acc = arg;
  if (seg->kind == MTH_SEG_HUGE) {
    acc->st->in_use += LOAD(seg->huge_size);
    acc->live_blocks++;
    return;
  }
  uint64_t idle = LOAD(seg->dirty_mask) & ~LOAD(seg->used_mask);
  acc->unpurged += (size_t)mth_popcount64(idle) << MTH_SLICE_SHIFT;
  for (size_t k = 1; k < MTH_SLICES; k++) {
    mth_page_t *page = &seg->pages[k];
    uint32_t flags = LOAD(page->flags);
    if (mth_page_unused(page, flags) || LOAD(page->slice_offset) != 0) continue;
    uint8_t bin = LOAD(page->bin);
    uint32_t used = LOAD(page->used);
    if (bin >= MTH_BINS) continue;
    acc->st->in_use += (size_t)used * LOAD(page->block_size);
    acc->live[bin] += used;
    acc->pending[bin] += (uint64_t)(MTH_HEARTBEAT - LOAD(page->credit));
    acc->live_blocks += used;
    if (bin != MTH_BIN_LARGE) acc->st->classes[bin].pages++;
  }
}

static void mth_stats_heap(mth_heap_t *h, void *arg) {
  mth_stats_acc_t *acc = arg;
  for (size_t b = 0; b < MTH_BINS; b++) acc->pending[b] += LOAD(h->st_mallocs[b]);
  acc->st->large_mallocs += LOAD(h->st_large);
  acc->st->huge_mallocs += LOAD(h->st_huge);
  acc->st->remote_frees += LOAD(h->st_remote_out);
  acc->st->reallocs_in_place += LOAD(h->st_realloc_inplace);
  acc->st->reallocs_mremap += LOAD(h->st_realloc_mremap);
  acc->st->inbox_overflows += LOAD(h->st_inbox_overflow);
  acc->st->inbox_drains += LOAD(h->st_inbox_drains);
  acc->st->span_ops += LOAD(h->st_span_ops);
  acc->st->segment_ops += LOAD(h->st_segment_ops);
  acc->frees_for += LOAD(h->st_proxy_frees);
  acc->yields += LOAD(h->st_proxy_yields);
  acc->remote_in += LOAD(h->st_remote_in);
  acc->borrows += LOAD(h->st_borrows);
  acc->lent_late += LOAD(h->st_lent_late);
  acc->lend_rmw += LOAD(h->st_lend_rmw);
  acc->cached += ((size_t)LOAD(h->retired_slices) + LOAD(h->lcache_slices)) << MTH_SLICE_SHIFT;
  /* blocks in a class's cache (bcache.c) are free, though their pages count them as used; the
   * cache's pending mallocs are counted as a page's */
  for (size_t k = 0; k < MTH_BCACHE_BINS; k++) {
    const mth_page_t *c = &h->bcache[k];
    if (LOAD(c->flags) == 0) continue;   /* never set up (mth_bcache_setup): holds nothing */
    uint64_t cached = mth_bcache_count(c);
    size_t bin = MTH_BCACHE_BIN0 + k;
    acc->pending[bin] += (uint64_t)(MTH_BCACHE_BEAT - LOAD(c->credit));
    if (cached > acc->live[bin]) cached = acc->live[bin];
    acc->live[bin] -= cached;
    acc->live_blocks -= cached;
    acc->st->in_use -= (size_t)cached * LOAD(c->block_size);
    acc->cached += (size_t)cached * LOAD(c->block_size);
  }
}

static size_t mth_peak_in_use;
/* Not in struct mtheap_stats (its size is the ABI): the report prints these from here, as the
 * last mtheap_stats_get left them. */
static struct {
  uint64_t frees_for, yields, waiting, borrows, lent_late;
  size_t unpurged_heaps, unpurged_arena, cached;
} mth_stats_more;

MTHEAP_API void mtheap_stats_get(struct mtheap_stats *out) {
  mth_stats_acc_t acc;
  /* Frees still in flight (our inbox, the inboxes of exited threads' heaps) are settled first,
   * so a quiescent program gets exact counts. */
  mth_heap_t *self = mth_tls_heap;
  if (self != &mth_heap_empty) {
    mth_heap_enter(self);
    mth_heap_drain_remote(self);
    mth_heap_leave(self);
  }
  mth_heaps_collect_abandoned();
  memset(out, 0, sizeof *out);
  memset(&acc, 0, sizeof acc);
  acc.st = out;
  mth_arena_visit(mth_stats_segment, &acc);
  mth_heaps_visit(mth_stats_heap, &acc);
  uint64_t mallocs = 0;
  for (size_t b = 1; b < MTH_BINS && b < MTHEAP_NUM_CLASSES; b++) {
    struct mtheap_class_stats *c = &out->classes[b];
    c->block_size = mth_bin_size(b);
    c->mallocs = acc.pending[b];
    c->frees = acc.pending[b] >= acc.live[b] ? acc.pending[b] - acc.live[b] : 0;
    mallocs += c->mallocs;
  }
  /* large spans count their allocation in bin 0; huge ones in st_huge */
  mallocs += out->large_mallocs + out->huge_mallocs;
  out->mallocs = mallocs;
  out->frees = mallocs >= acc.live_blocks ? mallocs - acc.live_blocks : 0;
  size_t peak = __atomic_load_n(&mth_peak_in_use, __ATOMIC_RELAXED);
  while (out->in_use > peak &&
         !__atomic_compare_exchange_n(&mth_peak_in_use, &peak, out->in_use, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  out->in_use_peak = out->in_use > peak ? out->in_use : peak;
  out->pages_in_use = atomic_load(&mth_gstats.pages_in_use);
  out->pages_peak = atomic_load(&mth_gstats.pages_peak);
  size_t unpurged_arena;
  mth_arena_stats(&out->reserved, &out->committed, &unpurged_arena);
  out->resident = mth_os_resident();
  out->purged = atomic_load(&mth_gstats.purged);
  out->mmap_calls = atomic_load(&mth_gstats.mmap_calls);
  out->munmap_calls = atomic_load(&mth_gstats.munmap_calls);
  out->madvise_calls = atomic_load(&mth_gstats.madvise_calls);
  out->mremap_calls = atomic_load(&mth_gstats.mremap_calls);
  out->threads_seen = atomic_load(&mth_gstats.threads_seen);
  out->threads_live = atomic_load(&mth_gstats.threads_live);
  out->heaps_reused = atomic_load(&mth_gstats.heaps_reused);
  out->lock_acquires = atomic_load(&mth_gstats.lock_acquires);
  out->lock_waits = atomic_load(&mth_gstats.lock_waits);
  out->lock_wait_ns = atomic_load(&mth_gstats.lock_wait_ns);
  /* a free for an absent owner is one more CAS, on the owner's lock */
  /* a span op also moves the global count of idle slices (segment.c), mostly: counted as 2 */
  out->shared_rmw = out->remote_frees + out->inbox_overflows + 2 * out->inbox_drains + 2 * out->span_ops +
                    3 * out->lock_acquires + acc.frees_for + acc.lend_rmw;
  /* the freers count a remote free after pushing it: a moment's snapshot may see it taken
   * in and not yet sent */
  uint64_t waiting = out->remote_frees > acc.remote_in ? out->remote_frees - acc.remote_in : 0;
  __atomic_store_n(&mth_stats_more.frees_for, acc.frees_for, __ATOMIC_RELAXED);
  __atomic_store_n(&mth_stats_more.yields, acc.yields, __ATOMIC_RELAXED);
  __atomic_store_n(&mth_stats_more.waiting, waiting, __ATOMIC_RELAXED);
  __atomic_store_n(&mth_stats_more.unpurged_heaps, acc.unpurged, __ATOMIC_RELAXED);
  __atomic_store_n(&mth_stats_more.unpurged_arena, unpurged_arena, __ATOMIC_RELAXED);
  __atomic_store_n(&mth_stats_more.cached, acc.cached, __ATOMIC_RELAXED);
  __atomic_store_n(&mth_stats_more.borrows, acc.borrows, __ATOMIC_RELAXED);
  __atomic_store_n(&mth_stats_more.lent_late, acc.lent_late, __ATOMIC_RELAXED);
}

/* Sizes as people read them: 1023 B, 12.3 KiB, 4.0 MiB. */
static const char *mth_fmt_size(char *buf, size_t n, uint64_t v) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double d = (double)v;
  int u = 0;
  while (d >= 1024 && u < 4) d /= 1024, u++;
  if (u == 0) snprintf(buf, n, "%llu B", (unsigned long long)v);
  else snprintf(buf, n, "%.1f %s", d, unit[u]);
  return buf;
}

/* Printing must not allocate (it runs at exit and from malloc_stats): format into a stack
 * buffer and write(2) it, so the FILE is only used for its descriptor. */
static void mth_out(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#include <stdarg.h>
static void mth_out(int fd, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n <= 0) return;
  if ((size_t)n >= sizeof buf) n = sizeof buf - 1;
  ssize_t w = write(fd, buf, (size_t)n);
  (void)w;
}

MTHEAP_API void mtheap_stats_print(FILE *f) {
  if (f == NULL) f = stderr;
  fflush(f);
  int fd = fileno(f);
  struct mtheap_stats st;
  mtheap_stats_get(&st);
  char a[32], b[32], c[32], d[32];
  mth_out(fd, "mtheap statistics (pid %d)\n", (int)getpid());
  mth_out(fd, "  in use     %-12s peak %-12s  in pages %-12s peak %s\n", mth_fmt_size(a, 32, st.in_use),
          mth_fmt_size(b, 32, st.in_use_peak), mth_fmt_size(c, 32, st.pages_in_use), mth_fmt_size(d, 32, st.pages_peak));
  mth_out(fd, "  reserved   %-12s committed %-12s resident %-12s purged %s (total)\n",
          mth_fmt_size(a, 32, st.reserved), mth_fmt_size(b, 32, st.committed), mth_fmt_size(c, 32, st.resident),
          mth_fmt_size(d, 32, st.purged));
  mth_out(fd, "  free       unpurged: heaps %-12s arena %-12s cached %-12s remote frees waiting %llu\n",
          mth_fmt_size(a, 32, __atomic_load_n(&mth_stats_more.unpurged_heaps, __ATOMIC_RELAXED)),
          mth_fmt_size(b, 32, __atomic_load_n(&mth_stats_more.unpurged_arena, __ATOMIC_RELAXED)),
          mth_fmt_size(c, 32, __atomic_load_n(&mth_stats_more.cached, __ATOMIC_RELAXED)),
          (unsigned long long)__atomic_load_n(&mth_stats_more.waiting, __ATOMIC_RELAXED));
  mth_out(fd, "  mallocs    %llu  frees %llu  (from another thread %llu)  large %llu  huge %llu\n",
          (unsigned long long)st.mallocs, (unsigned long long)st.frees, (unsigned long long)st.remote_frees,
          (unsigned long long)st.large_mallocs, (unsigned long long)st.huge_mallocs);
  mth_out(fd, "  realloc    in place %llu  by mremap %llu\n", (unsigned long long)st.reallocs_in_place,
          (unsigned long long)st.reallocs_mremap);
  mth_out(fd, "  os calls   mmap %llu  munmap %llu  madvise %llu  mremap %llu\n", (unsigned long long)st.mmap_calls,
          (unsigned long long)st.munmap_calls, (unsigned long long)st.madvise_calls, (unsigned long long)st.mremap_calls);
  mth_out(fd, "  threads    seen %llu  live %llu  heaps reused %llu\n", (unsigned long long)st.threads_seen,
          (unsigned long long)st.threads_live, (unsigned long long)st.heaps_reused);
  mth_out(fd, "  locks      %llu acquisitions, %llu waited, %.1f us waiting in total\n",
          (unsigned long long)st.lock_acquires, (unsigned long long)st.lock_waits, (double)st.lock_wait_ns / 1000.0);
  uint64_t ops = st.mallocs + st.frees;
  mth_out(fd, "  shared     %llu atomic RMWs (%.2f per 1000 mallocs+frees): remote frees %llu, inbox overflows %llu,\n"
              "             drains %llu, span ops %llu, segment ops %llu, freed for absent owners %llu\n"
              "             (drains for them cut short, the owner back and waiting: %llu)\n"
              "             spans on other heaps' free slices %llu (given back through the lender's list %llu)\n",
          (unsigned long long)st.shared_rmw, ops ? 1000.0 * (double)st.shared_rmw / (double)ops : 0.0,
          (unsigned long long)st.remote_frees, (unsigned long long)st.inbox_overflows,
          (unsigned long long)st.inbox_drains, (unsigned long long)st.span_ops, (unsigned long long)st.segment_ops,
          (unsigned long long)__atomic_load_n(&mth_stats_more.frees_for, __ATOMIC_RELAXED),
          (unsigned long long)__atomic_load_n(&mth_stats_more.yields, __ATOMIC_RELAXED),
          (unsigned long long)__atomic_load_n(&mth_stats_more.borrows, __ATOMIC_RELAXED),
          (unsigned long long)__atomic_load_n(&mth_stats_more.lent_late, __ATOMIC_RELAXED));
  mth_out(fd, "  %10s %14s %14s %12s %8s\n", "block size", "mallocs", "frees", "live", "pages");
  for (size_t i = 0; i < MTHEAP_NUM_CLASSES; i++) {
    const struct mtheap_class_stats *cl = &st.classes[i];
    if (cl->mallocs == 0 && cl->pages == 0) continue;
    mth_out(fd, "  %10zu %14llu %14llu %12llu %8llu\n", cl->block_size, (unsigned long long)cl->mallocs,
            (unsigned long long)cl->frees, (unsigned long long)(cl->mallocs - cl->frees), (unsigned long long)cl->pages);
  }
}

void mth_stats_at_exit(void) { mtheap_stats_print(stderr); }
