/* The arena: address space reserved in 1 GiB-aligned regions, handed out as runs of 2 MiB slots.
 *
 * Why: every mmap/munmap takes the kernel's mmap lock for writing and stalls all page faults of
 * the process (the NTT report's 300 ms mallocs).  Regions are reserved once and never unmapped;
 * freed runs are kept (dirty) and reused, and their pages are given back with madvise only after
 * the purge delay (a huge block's run: MTH_HUGE_KEEP_MS, internal.h), so steady-state
 * allocation of any size makes no mmap or munmap call.  A new
 * run goes where the most of its slots are still dirty: each clean slot it takes is page
 * faults and new resident memory.
 *
 * Invariants (under mth_arena_lock):
 *   - free bit set    => slot belongs to no run; dirty bit says whether it may be resident.
 *   - free bit clear  => slot is in a live run, or is being purged right now (busy).
 *   - head[slot] is the first slot of the live run containing slot (undefined when free).
 *   - regions are only ever added; a region's base and size never change.
 */
#include "internal.h"

#define MTH_MAX_REGIONS 4096

typedef struct {
  uint8_t *base;
  size_t nslots;
  uint64_t *free_bits;
  uint64_t *dirty_bits;
  uint32_t *head;
  uint64_t *purge_at;         /* ms timestamp a dirty slot is due to be purged */
} mth_region_t;

static mth_lock_t mth_arena_lock;
static mth_region_t *mth_regions[MTH_MAX_REGIONS];
static _Atomic size_t mth_nregions;
static _Atomic uint64_t mth_arena_purge_next;   /* 0: nothing dirty waits; else earliest due time */

MTH_INLINE bool bit_get(const uint64_t *w, size_t i) { return (w[i >> 6] >> (i & 63)) & 1; }
MTH_INLINE void bit_set(uint64_t *w, size_t i) { w[i >> 6] |= (uint64_t)1 << (i & 63); }
MTH_INLINE void bit_clear(uint64_t *w, size_t i) { w[i >> 6] &= ~((uint64_t)1 << (i & 63)); }

static mth_region_t *mth_region_new(size_t size) {
  size_t nslots = size >> MTH_SEG_SHIFT;
  size_t nwords = (nslots + 63) / 64;
  /* heads before due times: a small process's first slots then touch one page of this, not two */
  size_t bytes = sizeof(mth_region_t) + 2 * nwords * 8 + ((nslots * 4 + 7) & ~(size_t)7) + nslots * 8;
  if (atomic_load(&mth_nregions) >= MTH_MAX_REGIONS) return NULL;
  uint8_t *meta = mth_meta_alloc(bytes);
  if (!meta) return NULL;
  uint8_t *base = mth_os_reserve(size, MTH_REGION_SIZE);
  if (!base) return NULL;   /* the metadata chunk is lost; this happens once, at exhaustion */
  mth_region_t *r = (mth_region_t *)meta;
  r->base = base;
  r->nslots = nslots;
  r->free_bits = (uint64_t *)(r + 1);
  r->dirty_bits = r->free_bits + nwords;
  r->head = (uint32_t *)(r->dirty_bits + nwords);
  r->purge_at = (uint64_t *)(r->head + ((nslots + 1) & ~(size_t)1));
  for (size_t i = 0; i < nslots; i++) bit_set(r->free_bits, i);
  if (mth_opt.verbose)
    mth_message("reserved region of %zu MiB at %p", size >> 20, (void *)base);
  size_t n = atomic_load(&mth_nregions);
  mth_regions[n] = r;
  atomic_store_explicit(&mth_nregions, n + 1, memory_order_release);
  return r;
}

static mth_region_t *mth_region_of(const void *p) {
  size_t n = atomic_load_explicit(&mth_nregions, memory_order_acquire);
  for (size_t i = 0; i < n; i++) {
    mth_region_t *r = mth_regions[i];
    if ((const uint8_t *)p >= r->base && (const uint8_t *)p < r->base + (r->nslots << MTH_SEG_SHIFT))
      return r;
  }
  return NULL;
}

bool mth_arena_contains(const void *p) { return mth_region_of(p) != NULL; }

/* First fit from slot `from`: a run of n free slots whose slot (i + lead) starts on a multiple
 * of step.  With dirty, only runs that start on a dirty slot: reusing memory that is still
 * resident saves the page faults a purged run would cost (the landscape's malloc-large lesson). */
static long mth_region_find(const mth_region_t *r, size_t n, size_t step, size_t lead, bool dirty, size_t from) {
  size_t i = from;
  while (i + n <= r->nslots) {
    const uint64_t *w = dirty ? r->dirty_bits : r->free_bits;
    if (w[i >> 6] == 0 && (i & 63) == 0) { i += 64; continue; }
    if (step > 1) {
      size_t rem = (i + lead) % step;
      if (rem) { i += step - rem; continue; }
    }
    if (dirty && !bit_get(r->dirty_bits, i)) { i++; continue; }
    size_t j = 0;
    while (j < n && bit_get(r->free_bits, i + j)) j++;
    if (j == n) return (long)i;
    i += j + 1;
  }
  return -1;
}

/* A slot that joins a run as other than its head becomes block memory.  If it is dirty, the
 * header a span segment left in it may still be intact, and a span segment made there later
 * would trust that header's record of which slices are zero (segment.c, mth_header_init)
 * although the block has written them: so the old header is invalidated now, before any write.
 * (fuzz_replay: calloc returned stale bytes once blocks of one or two slots became common.) */
static void mth_run_claim(mth_region_t *r, size_t s, size_t n, uint32_t head, bool *is_zero) {
  bool zero = true;
  for (size_t k = s; k < s + n; k++) {
    if (bit_get(r->dirty_bits, k)) {
      zero = false;
      mth_segment_t *old = (mth_segment_t *)(r->base + (k << MTH_SEG_SHIFT));
      if (k != head && (mth_segment_valid(old) || mth_segment_freed(old)))
        __atomic_store_n(&old->cookie, 0, __ATOMIC_RELAXED);
    }
    bit_clear(r->free_bits, k);
    bit_clear(r->dirty_bits, k);
    r->head[k] = head;
  }
  if (is_zero) *is_zero = zero;
}

/* Among the runs that start on a dirty slot, the one with the most dirty slots (the first
 * such, stopping at a fully dirty one); -1 if no run starts dirty. */
static long mth_arena_find_dirtiest(size_t nr, size_t nslots, size_t step, size_t lead, mth_region_t **rp) {
  long best = -1;
  size_t best_dirty = 0;
  for (size_t i = 0; i < nr; i++) {
    mth_region_t *r = mth_regions[i];
    for (long c = mth_region_find(r, nslots, step, lead, true, 0); c >= 0;
         c = mth_region_find(r, nslots, step, lead, true, (size_t)c + 1)) {
      size_t d = 0;
      for (size_t k = (size_t)c; k < (size_t)c + nslots; k++) d += bit_get(r->dirty_bits, k);
      if (d > best_dirty) {
        best_dirty = d;
        best = c;
        *rp = r;
        if (d == nslots) return best;
      }
    }
  }
  return best;
}

/* A run of nslots; with align > a slot, slot (start + lead) is aligned to it. */
mth_segment_t *mth_arena_alloc(size_t nslots, size_t align, size_t lead, bool *is_zero) {
  size_t step = align > MTH_SEG_SIZE ? align >> MTH_SEG_SHIFT : 1;
  if (align > MTH_REGION_SIZE) return NULL;
  mth_lock(&mth_arena_lock);
  mth_region_t *r = NULL;
  size_t nr = atomic_load(&mth_nregions);
  long s = mth_arena_find_dirtiest(nr, nslots, step, lead, &r);
  for (size_t i = 0; i < nr && s < 0; i++) {
    s = mth_region_find(mth_regions[i], nslots, step, lead, false, 0);
    if (s >= 0) r = mth_regions[i];
  }
  if (s < 0) {
    size_t need = ((nslots + step) << MTH_SEG_SHIFT);
    size_t size = mth_opt.region_size;
    if (need > size) size = (need + MTH_REGION_SIZE - 1) & ~(MTH_REGION_SIZE - 1);
    r = mth_region_new(size);
    if (r) s = mth_region_find(r, nslots, step, lead, false, 0);
  }
  if (s < 0) {
    mth_unlock(&mth_arena_lock);
    return NULL;
  }
  mth_run_claim(r, (size_t)s, nslots, (uint32_t)s, is_zero);
  mth_unlock(&mth_arena_lock);
  return (mth_segment_t *)(r->base + ((size_t)s << MTH_SEG_SHIFT));
}

/* Grow a live run in place if the slots after it are free. */
bool mth_arena_try_extend(void *start, size_t nslots, size_t new_nslots) {
  mth_lock(&mth_arena_lock);
  mth_region_t *r = mth_region_of(start);
  size_t s = (size_t)((uint8_t *)start - r->base) >> MTH_SEG_SHIFT;
  bool ok = s + new_nslots <= r->nslots;
  for (size_t k = s + nslots; ok && k < s + new_nslots; k++) ok = bit_get(r->free_bits, k);
  if (ok) mth_run_claim(r, s + nslots, new_nslots - nslots, (uint32_t)s, NULL);
  mth_unlock(&mth_arena_lock);
  return ok;
}

void mth_arena_free(void *start, size_t nslots, bool clean) {
  mth_arena_free_keep(start, nslots, clean, mth_opt.purge_delay_ms);
}

/* The run goes back to the free slots; unless clean, its slots stay resident for reuse and are
 * purged keep_ms later (0: now; -1: only by a forced purge). */
void mth_arena_free_keep(void *start, size_t nslots, bool clean, long keep_ms) {
  if (!clean && keep_ms == 0) {
    mth_os_purge(start, nslots << MTH_SEG_SHIFT);
    clean = true;
  }
  uint64_t due = clean || keep_ms < 0 ? UINT64_MAX : mth_clock_ms() + (uint64_t)keep_ms;
  mth_lock(&mth_arena_lock);
  mth_region_t *r = mth_region_of(start);
  size_t s = (size_t)((uint8_t *)start - r->base) >> MTH_SEG_SHIFT;
  for (size_t k = s; k < s + nslots; k++) {
    bit_set(r->free_bits, k);
    if (!clean) {
      bit_set(r->dirty_bits, k);
      r->purge_at[k] = due;
    }
  }
  if (due != UINT64_MAX) {
    uint64_t next = atomic_load_explicit(&mth_arena_purge_next, memory_order_relaxed);
    if (next == 0 || due < next) atomic_store_explicit(&mth_arena_purge_next, due, memory_order_relaxed);
  }
  mth_unlock(&mth_arena_lock);
}

void *mth_arena_find_head(const void *p) {
  mth_region_t *r = mth_region_of(p);
  if (!r) return NULL;
  mth_lock(&mth_arena_lock);
  size_t s = (size_t)((const uint8_t *)p - r->base) >> MTH_SEG_SHIFT;
  void *h = bit_get(r->free_bits, s) ? NULL : r->base + ((size_t)r->head[s] << MTH_SEG_SHIFT);
  mth_unlock(&mth_arena_lock);
  return h;
}

/* Give dirty free runs back to the OS.  madvise runs outside the lock: the slots are marked
 * busy (not free) meanwhile, so nobody allocates them while they are being dropped. */
void mth_arena_purge(bool force) {
  if (mth_opt.purge_delay_ms < 0 && !force) return;
  uint64_t due = atomic_load_explicit(&mth_arena_purge_next, memory_order_relaxed);
  if (!force && due == 0) return;   /* nothing waits: do not even read the clock */
  uint64_t now = mth_clock_ms();
  if (!force && now < due) return;
  enum { MAXRUNS = 64 };
  struct { uint8_t *p; size_t n; } runs[MAXRUNS];
  for (;;) {
    size_t nruns = 0;
    uint64_t next = 0;
    mth_lock(&mth_arena_lock);
    size_t nr = atomic_load(&mth_nregions);
    for (size_t i = 0; i < nr && nruns < MAXRUNS; i++) {
      mth_region_t *r = mth_regions[i];
      for (size_t k = 0; k < r->nslots && nruns < MAXRUNS; k++) {
        if (!bit_get(r->dirty_bits, k)) {
          if ((k & 63) == 0 && r->dirty_bits[k >> 6] == 0) k += 63;
          continue;
        }
        if (!force && r->purge_at[k] > now) {
          uint64_t due = r->purge_at[k];
          if (next == 0 || due < next) next = due;
          continue;
        }
        bit_clear(r->dirty_bits, k);
        bit_clear(r->free_bits, k);   /* busy while purging */
        uint8_t *p = r->base + (k << MTH_SEG_SHIFT);
        if (nruns > 0 && runs[nruns - 1].p + (runs[nruns - 1].n << MTH_SEG_SHIFT) == p)
          runs[nruns - 1].n++;
        else
          runs[nruns].p = p, runs[nruns].n = 1, nruns++;
      }
    }
    if (nruns < MAXRUNS) atomic_store_explicit(&mth_arena_purge_next, next, memory_order_relaxed);
    mth_unlock(&mth_arena_lock);
    for (size_t i = 0; i < nruns; i++) mth_os_purge(runs[i].p, runs[i].n << MTH_SEG_SHIFT);
    if (nruns == 0) return;
    mth_lock(&mth_arena_lock);
    for (size_t i = 0; i < nruns; i++) {
      mth_region_t *r = mth_region_of(runs[i].p);
      size_t s = (size_t)(runs[i].p - r->base) >> MTH_SEG_SHIFT;
      for (size_t k = s; k < s + runs[i].n; k++) bit_set(r->free_bits, k);
    }
    mth_unlock(&mth_arena_lock);
    if (nruns < MAXRUNS) return;
  }
}

/* committed: slots in use, or free and maybe resident; unpurged: the latter alone */
void mth_arena_stats(size_t *reserved, size_t *committed, size_t *unpurged) {
  size_t res = 0, com = 0, dirty = 0;
  mth_lock(&mth_arena_lock);
  size_t nr = atomic_load(&mth_nregions);
  for (size_t i = 0; i < nr; i++) {
    mth_region_t *r = mth_regions[i];
    res += r->nslots << MTH_SEG_SHIFT;
    for (size_t k = 0; k < r->nslots; k++) {
      bool free = bit_get(r->free_bits, k);
      if (!free || bit_get(r->dirty_bits, k)) com += MTH_SEG_SIZE;
      if (free && bit_get(r->dirty_bits, k)) dirty += MTH_SEG_SIZE;
    }
  }
  mth_unlock(&mth_arena_lock);
  *reserved = res;
  *committed = com;
  *unpurged = dirty;
}

void mth_arena_visit(mth_segment_visit_fn fn, void *arg) {
  mth_lock(&mth_arena_lock);
  size_t nr = atomic_load(&mth_nregions);
  for (size_t i = 0; i < nr; i++) {
    mth_region_t *r = mth_regions[i];
    for (size_t k = 0; k < r->nslots; k++) {
      if (bit_get(r->free_bits, k) || r->head[k] != k) continue;
      mth_segment_t *seg = (mth_segment_t *)(r->base + (k << MTH_SEG_SHIFT));
      if (mth_segment_valid(seg)) fn(seg, arg);
    }
  }
  mth_unlock(&mth_arena_lock);
}

void mth_arena_fork_prepare(void) { mth_lock(&mth_arena_lock); }
void mth_arena_fork_parent(void) { mth_unlock(&mth_arena_lock); }
void mth_arena_fork_child(void) { mth_lock_reinit(&mth_arena_lock); }
