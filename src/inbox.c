/* The remote-free inbox: how a block freed by a thread that does not own it gets back to the
 * heap that does.
 *
 * A freeing thread claims a slot of the owner's array with one fetch_add and stores the block
 * there; when the array is full (the owner has not drained it for MTH_INBOX_SLOTS frees) it
 * pushes the block on the owner's overflow list with one CAS, as every free did before the
 * array.  The owner drains both on its slow paths.  The array is why: walking a list of blocks
 * that other cores just wrote is one cache miss after another, each address known only when
 * the previous block has arrived (the drain was 94% of its samples waiting on that load in
 * xmalloc).  The array hands the owner the addresses eight to a cache line, and the only access
 * to a block itself is the store that links it into its page, which does not stall.
 *
 * Invariants:
 *   - inbox_n counts slots claimed since the last reset; a claim i >= MTH_INBOX_SLOTS went to
 *     the overflow list instead.  Slots [inbox_read, min(inbox_n, SLOTS)) are claimed and not
 *     yet consumed; a claimed slot may still read NULL for a moment (claimed, not yet stored):
 *     the drain stops there and resumes at its next call.
 *   - only the owner resets inbox_n to 0, by a CAS from the value whose claims it has all
 *     consumed: a claim made meanwhile makes the CAS fail, so no claim is ever lost.  The
 *     counter is 64-bit: an owner that never drains cannot make it wrap.
 *   - consumed slots are NULL again before the reset that lets them be claimed anew.
 *   - a block on the overflow list holds next (word 0) and a hint (word 1, blocks are at least
 *     16 bytes): the block its freer pushed MTH_OVF_AHEAD pushes earlier, or NULL.  The hint is
 *     only ever prefetched, never dereferenced: it may name a block drained and reused since.
 *   - the slots, inbox_read, the reset, heap->held and heap->backlog are consumed only under
 *     the heap's lock (mth_heap_enter): by the owner, or by a freer draining for it (below).
 *   - whenever the lock is free, backlog != NULL implies held != NULL (mth_inbox_hand_over):
 *     the owner's tick, on every slow path, tests held alone.  handed, when not NULL, is held's
 *     only block, moved there from backlog; the next drain for the owner moves it back, the
 *     owner's own drain clears it.
 *
 * Why the hint: a consumer that frees a batch while its producer sleeps (bench malloc_test,
 * 5000 blocks a batch) overflows the array, and the owner walks that list one cache miss at a
 * time, each address known only when the previous block has arrived: `perf` put 19% of
 * `malloc_test -t 4` on that one load.  Prefetching the block eight pushes back keeps several
 * misses in flight: interleaved against the plain walk (`mtheap-bench run --quick --workloads
 * malloc_test,xmalloc,larson,mstress --threads 1,2,4,8 --repeat 5`), malloc_test 0.74-0.89x
 * the time at 2-8 pairs, the rest unchanged (time geomean 0.95x).
 */
#include "internal.h"

static bool mth_inbox_free_for(mth_heap_t *owner, mth_block_t *b);

mth_inbox_result_t mth_inbox_push(mth_heap_t *owner, mth_block_t *b) {
  uint64_t i = atomic_fetch_add_explicit(&owner->inbox_n, 1, memory_order_relaxed);
  if (MTH_LIKELY(i < MTH_INBOX_SLOTS)) {
    /* release: the owner's acquire load of the slot sees everything written to the block */
    atomic_store_explicit(&owner->inbox[i], b, memory_order_release);
    return MTH_INBOX_SLOT;
  }
  mth_heap_t *me = mth_tls_heap;
  /* every 64th overflow of this freer: is the owner away?  (a clock read, so not each one) */
  if (me != &mth_heap_empty && (me->ovf_i & 63) == 0 && mth_inbox_free_for(owner, b)) {
    me->ovf_i++;
    return MTH_INBOX_FREED_FOR;
  }
  mth_block_t *ahead = NULL;
  if (me != &mth_heap_empty) {
    if (me->ovf_owner != owner) {   /* a new destination: the old ring's blocks are not on its list */
      memset(me->ovf_ring, 0, sizeof me->ovf_ring);
      me->ovf_owner = owner;
    }
    mth_block_t **slot = &me->ovf_ring[me->ovf_i++ % MTH_OVF_AHEAD];
    ahead = *slot;
    *slot = b;
  }
  ((mth_block_t **)b)[1] = ahead;
  mth_block_t *head = atomic_load_explicit(&owner->remote, memory_order_relaxed);
  do b->next = head;
  while (!atomic_compare_exchange_weak_explicit(&owner->remote, &head, b, memory_order_release,
                                                memory_order_relaxed));
  return MTH_INBOX_OVERFLOW;
}

static uint64_t mth_drain_one_for(mth_heap_t *heap, mth_block_t *b);

/* The stored slots, each block to its page: by the owner, or (for_absent) by a freer holding
 * the lock of an absent owner (below).  Inline, so each caller gets its own loop.  Returns the
 * blocks the latter freed into their pages. */
MTH_INLINE uint64_t mth_inbox_take_slots(mth_heap_t *heap, bool for_absent) {
  uint64_t n = atomic_load_explicit(&heap->inbox_n, memory_order_acquire), freed = 0;
  if (n == 0) return 0;
  uint32_t lim = n < MTH_INBOX_SLOTS ? (uint32_t)n : MTH_INBOX_SLOTS;
  uint32_t i = heap->inbox_read, first = i;
  for (; i < lim; i++) {
    mth_block_t *b = atomic_load_explicit(&heap->inbox[i], memory_order_acquire);
    if (MTH_UNLIKELY(b == NULL)) break;   /* claimed, not stored yet */
    if (for_absent && ((i - first) & 31) == 31 && mth_heap_owner_waits(heap)) break;
    atomic_store_explicit(&heap->inbox[i], NULL, memory_order_relaxed);
    if (for_absent) freed += mth_drain_one_for(heap, b);
    else mth_page_free_local(heap, mth_page_of(mth_segment_of(b), b), b);
  }
  heap->inbox_read = i;
  /* a block a drain for the owner kept is counted when the owner takes it from held */
  MTH_RACY_ADD(heap->st_remote_in, for_absent ? freed : i - first);
  if (i == lim && atomic_compare_exchange_strong_explicit(&heap->inbox_n, &n, 0, memory_order_acq_rel,
                                                          memory_order_relaxed))
    heap->inbox_read = 0;
  return freed;
}

/* An overflow list, by the owner: each block to its page. */
static void mth_inbox_take_list(mth_heap_t *heap, mth_block_t *b) {
  uint64_t n = 0;
  while (b) {
    mth_block_t *next = b->next;
    __builtin_prefetch(((mth_block_t **)b)[1]);
    mth_page_free_local(heap, mth_page_of(mth_segment_of(b), b), b);
    b = next;
    n++;
  }
  MTH_RACY_ADD(heap->st_remote_in, n);
}

void mth_heap_drain_remote(mth_heap_t *heap) {
  /* left by a drain for the owner (below): blocks it kept, and the rest when it stopped */
  if (MTH_UNLIKELY(heap->held != NULL)) {
    mth_block_t *held = heap->held, *rest = heap->backlog;
    heap->held = heap->backlog = heap->handed = NULL;
    mth_inbox_take_list(heap, held);
    mth_inbox_take_list(heap, rest);
  }
  if (atomic_load_explicit(&heap->inbox_n, memory_order_relaxed) == 0 &&
      atomic_load_explicit(&heap->remote, memory_order_relaxed) == NULL)
    return;
  MTH_RACY_ADD(heap->st_inbox_drains, 1);
  mth_inbox_take_slots(heap, false);
  mth_inbox_take_list(heap, atomic_exchange_explicit(&heap->remote, NULL, memory_order_acquire));
}

/* ---- frees for an absent owner ----
 *
 * Why: a thread that allocated and then stopped calling malloc -- a main thread that built the
 * data and waits in pthread_join, a loader that sleeps -- never drains its inbox, so what other
 * threads free of its blocks stays in its pages, and they allocate fresh memory instead: `bench
 * larson -n 5000` (the main thread fills the arrays the workers replace) peaked at 14.2 MiB at
 * two threads against glibc's 13.3, and at 10.5 when the arrays were filled by a thread that
 * exited (its heap parked, drained by the others' ticks).
 *
 * How: a freer that finds the owner's array full -- MTH_INBOX_SLOTS frees since the owner last
 * drained -- asks, at every 64th such free, whether the owner is away: no slow path for
 * MTH_ABSENT_MS (mth_heap_absent).  If so it tries the owner's lock once and, holding it, frees
 * the block into its page itself where the owner's fast paths cannot be changing that page: a
 * full page (they only read its tag, internal.h), or a large span (mth_page_free_for).  A page that
 * empties goes back to its segment and its memory to the OS (after the purge delay for an owner
 * that came back after such a purge before: segment.c), an emptied segment to the arena,
 * where any thread reuses it.  The owner's backlog (slots and overflow list) goes the same way,
 * the blocks of its other pages to heap->held for its own drain.  Other threads' ticks do this
 * for the tail that never fills the array (heap.c, mth_heaps_help_absent).  An owner that comes
 * back meanwhile marks its lock (mth_heap_enter_slow) and the drain stops within 32 blocks,
 * leaving it the rest: slots from inbox_read on, the list's rest in heap->backlog; between
 * chunks of MTH_DRAIN_CHUNK blocks the lock is let go.  An owner that is only
 * descheduled is left alone: its emptied pages would be purged and faulted in again (`xmalloc`
 * producers, 1.12-1.14x the peak RSS when every overflow asked).  The cost to a freer: a clock
 * read per 64 overflows, and per batch one CAS on the owner's lock. */
MTH_INLINE bool mth_free_for_ok(const mth_page_t *page, uint32_t flags) {
  return flags == MTH_PAGE_FULL ||
         (flags == 0 && MTH_RACY_GET(page->bin) == MTH_BIN_LARGE);
}

/* One block of the owner's inbox, by a freer holding its lock: into its page, or kept for
 * the owner (a page its fast paths use, or a block free already, which the owner reports). */
static uint64_t mth_drain_one_for(mth_heap_t *heap, mth_block_t *b) {
  mth_page_t *page = mth_page_of(mth_segment_of(b), b);
  if (mth_free_for_ok(page, mth_page_flags(page)) && mth_page_free_for(heap, page, b)) return 1;
  b->next = heap->held;
  heap->held = b;
  return 0;
}

/* Up to MTH_DRAIN_CHUNK blocks of the backlog into their pages, holding the lock; the rest
 * stays in heap->backlog, where the owner's drain or the next chunk finds it.  Stops early
 * when the owner is back and waits for the lock.  Returns the blocks freed into pages. */
static uint64_t mth_inbox_drain_chunk(mth_heap_t *heap) {
  mth_block_t *b = heap->backlog;
  uint64_t freed = 0;
  for (uint32_t n = 1; b && n <= MTH_DRAIN_CHUNK; n++) {
    if ((n & 31) == 0 && mth_heap_owner_waits(heap)) break;
    mth_block_t *next = b->next;
    __builtin_prefetch(((mth_block_t **)b)[1]);
    freed += mth_drain_one_for(heap, b);
    b = next;
  }
  heap->backlog = b;
  MTH_RACY_ADD(heap->st_remote_in, freed);   /* held's blocks: when the owner takes them */
  return freed;
}

/* Before letting go of the lock: a backlog is never left without a held block, one moves over,
 * so that the owner's tick finds both testing held alone (a second test on every tick was
 * 0.08 instructions a block in hotpath's 16 KiB batch row, past tcmalloc's 83.1). */
MTH_INLINE void mth_inbox_hand_over(mth_heap_t *heap) {
  mth_block_t *b = heap->backlog;
  if (b != NULL && heap->held == NULL) {
    heap->backlog = b->next;
    b->next = NULL;
    heap->held = heap->handed = b;
  }
}

/* Holding the lock of an absent owner: its slots and its overflow list as it is now, chunk by
 * chunk, letting go of the lock between chunks so that an owner coming back never waits for
 * more than one (a drain of a 5000-block list held it for milliseconds, and a consumer
 * preempted in the middle kept its producer waiting 16 ms a time: `malloc_test -t 8`, 1.4 s
 * of lock waits in a 3 s run).  Stops when the owner waits, comes back, or exits, or the lock
 * is taken meanwhile.  Returns with the lock released, and the blocks freed into pages. */
static uint64_t mth_inbox_drain_for(mth_heap_t *heap) {
  mth_block_t *h = heap->handed;
  if (h != NULL) {   /* back to the backlog: it is not a block kept for the owner */
    if (heap->held == h) {   /* always (nothing else pushes on held in between); cheap to ask */
      heap->held = h->next;
      h->next = heap->backlog;
      heap->backlog = h;
    }
    heap->handed = NULL;
  }
  uint64_t freed = mth_inbox_take_slots(heap, true);
  if (heap->backlog == NULL)   /* else a cut-short drain's rest comes first */
    heap->backlog = atomic_exchange_explicit(&heap->remote, NULL, memory_order_acquire);
  for (;;) {
    freed += mth_inbox_drain_chunk(heap);
    if (mth_heap_owner_waits(heap)) {
      MTH_RACY_ADD(heap->st_proxy_yields, 1);
      break;
    }
    if (heap->backlog == NULL) break;
    mth_inbox_hand_over(heap);
    mth_heap_leave_for(heap);
    if (!mth_heap_try_enter_for(heap)) return freed;
    if (atomic_load_explicit(&heap->state, memory_order_relaxed) != MTH_HEAP_LIVE ||
        !mth_heap_absent(heap, mth_clock_ms()))
      break;
  }
  mth_inbox_hand_over(heap);
  mth_heap_leave_for(heap);
  return freed;
}

/* b's page is the owner's, eligible, and the owner is away: b and the backlog into their pages.
 * The count goes to the freeing thread's heap (it exists: it is freeing a remote block). */
static bool mth_inbox_free_for(mth_heap_t *owner, mth_block_t *b) {
  mth_segment_t *seg = mth_segment_of(b);
  mth_page_t *page = mth_page_of(seg, b);
  if (!mth_free_for_ok(page, mth_page_flags(page)) ||
      atomic_load_explicit(&owner->state, memory_order_relaxed) != MTH_HEAP_LIVE ||
      !mth_heap_absent(owner, mth_clock_ms()) || !mth_heap_try_enter_for(owner))
    return false;
  /* again under the lock: the owner may have drained and refilled the page, or exited */
  if (atomic_load_explicit(&owner->state, memory_order_relaxed) != MTH_HEAP_LIVE ||
      page->home != owner || !mth_free_for_ok(page, mth_page_flags(page))) {
    mth_heap_leave_for(owner);
    return false;
  }
  if (!mth_page_free_for(owner, page, b)) {
    mth_heap_leave_for(owner);
    mth_free_twice(b);
    return true;
  }
  MTH_RACY_ADD(owner->st_remote_in, 1);   /* b itself, which never entered the inbox */
  uint64_t n = mth_inbox_drain_for(owner);   /* lets go of the lock */
  mth_heap_t *me = mth_tls_heap;
  if (me != &mth_heap_empty) MTH_RACY_ADD(me->st_proxy_frees, n);
  return true;
}

/* From another thread's tick, holding the lock of a heap whose owner is away (heap.c); lets
 * go of it. */
void mth_inbox_drain_absent(mth_heap_t *heap) {
  uint64_t n = mth_inbox_drain_for(heap);
  mth_heap_t *me = mth_tls_heap;
  if (me != &mth_heap_empty) MTH_RACY_ADD(me->st_proxy_frees, n);
}

/* In a fork child only this thread exists: a slot a vanished thread had claimed will never be
 * stored.  Take what was stored and start the array afresh. */
void mth_inbox_fork_child(mth_heap_t *heap) {
  uint64_t n = atomic_load_explicit(&heap->inbox_n, memory_order_relaxed);
  uint32_t lim = n < MTH_INBOX_SLOTS ? (uint32_t)n : MTH_INBOX_SLOTS;
  for (uint32_t i = heap->inbox_read; i < lim; i++) {
    mth_block_t *b = atomic_load_explicit(&heap->inbox[i], memory_order_relaxed);
    if (!b) continue;
    atomic_store_explicit(&heap->inbox[i], NULL, memory_order_relaxed);
    mth_page_free_local(heap, mth_page_of(mth_segment_of(b), b), b);
    MTH_RACY_ADD(heap->st_remote_in, 1);
  }
  atomic_store_explicit(&heap->inbox_n, 0, memory_order_relaxed);
  heap->inbox_read = 0;
}
