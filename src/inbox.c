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

bool mth_inbox_push(mth_heap_t *owner, mth_block_t *b) {
  uint64_t i = atomic_fetch_add_explicit(&owner->inbox_n, 1, memory_order_relaxed);
  if (MTH_LIKELY(i < MTH_INBOX_SLOTS)) {
    /* release: the owner's acquire load of the slot sees everything written to the block */
    atomic_store_explicit(&owner->inbox[i], b, memory_order_release);
    return false;
  }
  mth_heap_t *me = mth_tls_heap;
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
  return true;
}

static void mth_inbox_drain_slots(mth_heap_t *heap) {
  uint64_t n = atomic_load_explicit(&heap->inbox_n, memory_order_acquire);
  if (n == 0) return;
  uint32_t lim = n < MTH_INBOX_SLOTS ? (uint32_t)n : MTH_INBOX_SLOTS;
  uint32_t i = heap->inbox_read;
  for (; i < lim; i++) {
    mth_block_t *b = atomic_load_explicit(&heap->inbox[i], memory_order_acquire);
    if (MTH_UNLIKELY(b == NULL)) break;   /* claimed, not stored yet */
    atomic_store_explicit(&heap->inbox[i], NULL, memory_order_relaxed);
    mth_page_free_local(heap, mth_page_of(mth_segment_of(b), b), b);
  }
  heap->inbox_read = i;
  if (i == lim && atomic_compare_exchange_strong_explicit(&heap->inbox_n, &n, 0, memory_order_acq_rel,
                                                          memory_order_relaxed))
    heap->inbox_read = 0;
}

void mth_heap_drain_remote(mth_heap_t *heap) {
  if (atomic_load_explicit(&heap->inbox_n, memory_order_relaxed) == 0 &&
      atomic_load_explicit(&heap->remote, memory_order_relaxed) == NULL)
    return;
  MTH_RACY_ADD(heap->st_inbox_drains, 1);
  mth_inbox_drain_slots(heap);
  mth_block_t *b = atomic_exchange_explicit(&heap->remote, NULL, memory_order_acquire);
  while (b) {
    mth_block_t *next = b->next;
    __builtin_prefetch(((mth_block_t **)b)[1]);
    mth_page_free_local(heap, mth_page_of(mth_segment_of(b), b), b);
    b = next;
  }
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
  }
  atomic_store_explicit(&heap->inbox_n, 0, memory_order_relaxed);
  heap->inbox_read = 0;
}
