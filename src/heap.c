/* Thread heaps: creation on a thread's first malloc, recycling at thread exit, and the
 * process-wide state that goes with them (init, fork).  Remote frees: inbox.c.
 *
 * Invariants:
 *   - a heap is never freed: a dead thread's heap is abandoned and the next new thread adopts
 *     it whole (pages, segments, pending remote frees), so a program that creates and joins
 *     millions of threads keeps as many heaps as it ever had threads alive at once.
 *   - remote frees to an abandoned heap still land in its inbox (inbox.c); whoever owns it
 *     next (or mtheap_collect / the periodic tick of another thread) drains them.
 *   - after fork, heaps of threads that did not survive are "zombies": they may have been in
 *     the middle of an update, so they are never adopted or walked again in the child.
 */
#include "internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

MTH_HIDDEN uintptr_t mth_secret;

/* The empty heap is only its direct table: every path that could touch another field tests
 * for it first (heap == &mth_heap_empty).  A whole mth_heap_t here was 18.5 KiB of .data, all
 * of it mapped into every process by fault-around for the 4 KiB the fast path reads. */
MTH_HIDDEN _Alignas(mth_heap_t) mth_page_t *const mth_heap_empty_direct[MTH_DIRECT_N] = {[0 ... MTH_DIRECT_N - 1] = &mth_page_empty};
_Static_assert(offsetof(mth_heap_t, direct) == 0, "the empty heap is its direct table");
MTH_HIDDEN __thread mth_heap_t *mth_tls_heap __attribute__((tls_model("initial-exec"))) = &mth_heap_empty;

enum { MTH_HEAP_ZOMBIE = 3 };

static mth_lock_t mth_heaps_lock;
static mth_heap_t *mth_heaps_all;
static mth_heap_t *mth_heaps_abandoned;
static _Atomic int mth_have_abandoned;
static pthread_key_t mth_heap_key;
static _Atomic int mth_init_state;   /* 0 none, 1 running, 2 done */

extern void mth_stats_at_exit(void);
extern MTH_HIDDEN mth_lock_t mth_meta_lock;

static void mth_heap_abandon(mth_heap_t *heap);

static void mth_thread_exit(void *arg) {
  mth_heap_t *heap = arg;
  if (heap && heap == mth_tls_heap) mth_heap_abandon(heap);
}

/* The forking thread's own heap is held across fork: another thread freeing into it for an
 * absent owner (inbox.c) must not be halfway through when the child's copy is made. */
static void mth_fork_prepare(void) {
  mth_heap_t *self = mth_tls_heap;
  if (self != &mth_heap_empty) mth_heap_enter(self);
  mth_lock(&mth_heaps_lock);
  mth_lock(&mth_meta_lock);
  mth_arena_fork_prepare();
}

static void mth_fork_parent(void) {
  mth_arena_fork_parent();
  mth_unlock(&mth_meta_lock);
  mth_unlock(&mth_heaps_lock);
  mth_heap_t *self = mth_tls_heap;
  if (self != &mth_heap_empty) mth_heap_leave(self);
}

static void mth_fork_child(void) {
  mth_arena_fork_child();
  mth_lock_reinit(&mth_meta_lock);
  mth_lock_reinit(&mth_heaps_lock);
  mth_heap_t *self = mth_tls_heap;
  if (self != &mth_heap_empty) mth_heap_leave(self);
  uint64_t live = 0;
  for (mth_heap_t *h = mth_heaps_all; h; h = h->all_next) {
    if (h == self) { live++; continue; }
    if (atomic_load(&h->state) == MTH_HEAP_LIVE) atomic_store(&h->state, MTH_HEAP_ZOMBIE);
  }
  if (self != &mth_heap_empty) {
    self->tid = gettid();
    mth_inbox_fork_child(self);
  }
  atomic_store(&mth_gstats.threads_live, live);
}

void mth_process_init(void) {
  if (MTH_LIKELY(atomic_load_explicit(&mth_init_state, memory_order_acquire) == 2)) return;
  int expect = 0;
  if (!atomic_compare_exchange_strong(&mth_init_state, &expect, 1)) {
    while (atomic_load_explicit(&mth_init_state, memory_order_acquire) != 2) sched_yield();
    return;
  }
  /* nothing here may call malloc: we are inside the first one */
  mth_options_init();
  mth_pages_init();
  uintptr_t r = 0;
  if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
    r = (uintptr_t)&r ^ ((uintptr_t)mth_clock_ns() << 17);
  mth_secret = r | 1;
  if (pthread_key_create(&mth_heap_key, mth_thread_exit) != 0) mth_fatal("pthread_key_create failed");
  atomic_store_explicit(&mth_init_state, 2, memory_order_release);
  /* these may allocate, which now works */
  pthread_atfork(mth_fork_prepare, mth_fork_parent, mth_fork_child);
}

mth_heap_t *mth_heap_get_slow(void) {
  mth_process_init();
  mth_heap_t *heap = mth_tls_heap;
  if (heap != &mth_heap_empty) return heap;
  mth_lock(&mth_heaps_lock);
  heap = mth_heaps_abandoned;
  if (heap) {
    mth_heaps_abandoned = heap->abandoned_next;
    heap->abandoned_next = NULL;
    /* the last owner's come-backs are not this thread's (segment.c, mth_span_free_now); nobody
     * is inside a parked heap, so this needs no lock of its own */
    heap->absent_purged = heap->absent_returns = 0;
    atomic_store(&mth_have_abandoned, mth_heaps_abandoned != NULL);
    atomic_fetch_add_explicit(&mth_gstats.heaps_reused, 1, memory_order_relaxed);
  } else {
    heap = mth_meta_alloc_pages(sizeof *heap);
    if (!heap) {
      mth_unlock(&mth_heaps_lock);
      return NULL;
    }
    /* the block caches stay zero until used (mth_bcache_setup) */
    for (size_t i = 0; i < MTH_DIRECT_N; i++) heap->direct[i] = &mth_page_empty;
    heap->all_next = mth_heaps_all;
    mth_heaps_all = heap;
  }
  atomic_store(&heap->state, MTH_HEAP_LIVE);
  mth_unlock(&mth_heaps_lock);
  heap->tid = gettid();
  atomic_fetch_add_explicit(&mth_gstats.threads_seen, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&mth_gstats.threads_live, 1, memory_order_relaxed);
  mth_tls_heap = heap;
  pthread_setspecific(mth_heap_key, heap);
  return heap;
}

/* Give back what a heap holds but does not use: remote frees, kept empty pages, dirty slices
 * (all of them with force, else only those past the purge delay), the cached empty segment. */
static void mth_heap_tidy(mth_heap_t *heap, bool force) {
  mth_heap_enter(heap);
  mth_heap_drain_remote(heap);
  mth_spans_take_back(heap);
  mth_heap_release_retained(heap);
  mth_segments_purge(heap, mth_clock_ms(), force);
  mth_segment_release_empty(heap);
  mth_heap_leave(heap);
}

/* The lock is held by another thread freeing into this heap (inbox.c).  Marking it 2 tells
 * that thread we wait: it stops within 32 blocks and leaves us the rest of its drain, so the
 * wait is a few microseconds, not a whole drain of a batch (`malloc_test -t 8`: a producer
 * waking for its next batch waited 16 ms a time, 1.4 s of a 3 s run, while a consumer's tick
 * drained its 5000-block list).  Counted and timed like mtheap's other locks. */
void mth_heap_enter_slow(mth_heap_t *heap) {
  uint64_t t0 = mth_clock_ns();
  for (int i = 0;; i++) {
    int v = atomic_load_explicit(&heap->lock, memory_order_relaxed);
    if (v == 0 && atomic_compare_exchange_weak_explicit(&heap->lock, &v, 1, memory_order_acquire,
                                                        memory_order_relaxed))
      break;
    if (v == 1)   /* a failed CAS only means it was released or marked meanwhile */
      atomic_compare_exchange_weak_explicit(&heap->lock, &v, 2, memory_order_relaxed,
                                            memory_order_relaxed);
    if (i >= 16) sched_yield();
  }
  atomic_fetch_add_explicit(&mth_gstats.lock_waits, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&mth_gstats.lock_wait_ns, mth_clock_ns() - t0, memory_order_relaxed);
}

/* The state changes under the heap's lock: a thread freeing into it for its owner (inbox.c)
 * sees LIVE for as long as it holds the lock, and nobody is inside a heap that is parked. */
static void mth_heap_abandon(mth_heap_t *heap) {
  mth_heap_enter(heap);
  mth_heap_tidy(heap, false);
  mth_tls_heap = &mth_heap_empty;
  pthread_setspecific(mth_heap_key, NULL);
  mth_lock(&mth_heaps_lock);
  atomic_store(&heap->state, MTH_HEAP_ABANDONED);
  heap->abandoned_next = mth_heaps_abandoned;
  mth_heaps_abandoned = heap;
  atomic_store(&mth_have_abandoned, 1);
  mth_heap_leave(heap);   /* before the list is open: an adopter's entries start at depth 0 */
  mth_unlock(&mth_heaps_lock);
  atomic_fetch_sub_explicit(&mth_gstats.threads_live, 1, memory_order_relaxed);
}

/* Drain and tidy abandoned heaps, so frees into a dead thread's pages become reusable memory
 * without waiting for a new thread to adopt them. */
void mth_heaps_collect_abandoned(void) {
  if (!atomic_load_explicit(&mth_have_abandoned, memory_order_relaxed)) return;
  /* trylock: this runs from ticks, also from inside a tidy of this very list; a busy lock
   * means somebody else is doing the work */
  if (!mth_trylock(&mth_heaps_lock)) return;
  for (mth_heap_t *h = mth_heaps_abandoned; h; h = h->abandoned_next) mth_heap_tidy(h, false);
  mth_unlock(&mth_heaps_lock);
}

/* Live heaps whose owner is away (mth_heap_absent) get what their own tick would do, done for
 * them: remote frees taken in (inbox.c) -- the tail of a burst into a sleeping thread's heap
 * never fills the array that would make its freers do it -- and due purges, so memory freed
 * into a heap whose owner never comes back still goes back to the OS. */
static void mth_heaps_help_absent(mth_heap_t *self) {
  if (!mth_trylock(&mth_heaps_lock)) return;
  uint64_t now = mth_clock_ms();
  for (mth_heap_t *h = mth_heaps_all; h; h = h->all_next) {
    if (h == self || atomic_load_explicit(&h->state, memory_order_relaxed) != MTH_HEAP_LIVE) continue;
    bool frees = atomic_load_explicit(&h->inbox_n, memory_order_relaxed) != 0 ||
                 atomic_load_explicit(&h->remote, memory_order_relaxed) != NULL;
    bool back = atomic_load_explicit(&h->spans_back, memory_order_relaxed) != NULL;
    uint64_t due = MTH_RACY_GET(h->purge_next_ms);
    if (!frees && !back && (due == 0 || due > now)) continue;
    if (mth_heap_absent(h, now) && mth_heap_try_enter_for(h)) {
      if (atomic_load_explicit(&h->state, memory_order_relaxed) == MTH_HEAP_LIVE) {
        if (back) mth_spans_take_back(h);
        if (h->purge_next_ms && now >= h->purge_next_ms) mth_segments_purge(h, now, false);
        if (frees) {
          mth_inbox_drain_absent(h);   /* lets go of the lock */
          continue;
        }
      }
      mth_heap_leave_for(h);
    }
  }
  mth_unlock(&mth_heaps_lock);
}

/* Whether h's owner is away: no slow path (its ticks unchanged) for MTH_ABSENT_MS.  Other
 * threads keep the snapshot; the first look at new ticks only records them. */
bool mth_heap_absent(mth_heap_t *h, uint64_t now) {
  uint32_t t = MTH_RACY_GET(h->ticks);
  if (t != atomic_load_explicit(&h->help_ticks, memory_order_relaxed)) {
    atomic_store_explicit(&h->help_ticks, t, memory_order_relaxed);
    atomic_store_explicit(&h->help_ms, now, memory_order_relaxed);
    return false;
  }
  return now - atomic_load_explicit(&h->help_ms, memory_order_relaxed) >= MTH_ABSENT_MS;
}

static void mth_heap_tick_due(mth_heap_t *heap);

/* Remote frees waiting: two relaxed loads when there are none, so an empty inbox costs no
 * call into inbox.c. */
MTH_INLINE void mth_heap_take_remote(mth_heap_t *heap) {
  if (atomic_load_explicit(&heap->inbox_n, memory_order_relaxed) ||
      atomic_load_explicit(&heap->remote, memory_order_relaxed) || heap->held)   /* see inbox.c */
    mth_heap_drain_remote(heap);
}

/* Called on slow paths.  Remote frees are taken in every time; every 8th call looks for purge
 * work, and reads the clock only if some is waiting (in this heap or in the arena), so a
 * thread with nothing to purge pays two loads.  A thread that stays on the fast path gets
 * the heartbeat's tick below instead. */
void mth_heap_tick(mth_heap_t *heap) {
  mth_heap_take_remote(heap);
  MTH_RACY_ADD(heap->ticks, 1);   /* other threads read it (mth_heap_absent) */
  if ((heap->ticks & 7) != 0) return;
  mth_heap_tick_due(heap);
}

/* The tick from a fast path (mth_bcache_trip), which holds no lock: one call, in tail position
 * there, that takes the heap's lock around it. */
void mth_heap_tick_locked(mth_heap_t *heap) {
  mth_heap_enter(heap);
  mth_heap_tick(heap);
  mth_heap_leave(heap);
}

/* A page's heartbeat tick (every MTH_HEARTBEAT mallocs from it): not every 8th, every one, as
 * it is rare by construction.  A thread that only takes the fast path once its peak is freed
 * (rss-return: 32 small blocks replaced every millisecond) had its deadlines looked at once a
 * second: the block caches' scavenge needs two looks 100 ms apart before the pages under the
 * cached blocks empty, and the segments they empty then wait out the purge delay in the arena,
 * so a freed 1 GiB peak stayed 31% resident after 3 s when the phase of the 8 fell badly (1.7%
 * when it did not). */
void mth_heap_tick_beat(mth_heap_t *heap) {
  mth_heap_take_remote(heap);
  MTH_RACY_ADD(heap->ticks, 1);
  mth_heap_tick_due(heap);
}

/* The deadlines: kept pages, purging, block-cache scavenging, abandoned heaps; and spans other
 * heaps gave back to our segments while we held our lock (lend.c), which wait for this. */
static void mth_heap_tick_due(mth_heap_t *heap) {
  if (heap->retired_n) mth_retired_expire(heap);
  if (MTH_UNLIKELY(atomic_load_explicit(&heap->spans_back, memory_order_relaxed) != NULL))
    mth_spans_take_back(heap);
  if (MTH_UNLIKELY(heap->absent_purged)) {   /* back after others purged for it: see segment.c */
    heap->absent_purged = 0;
    if (heap->absent_returns < UINT8_MAX) heap->absent_returns++;
  }
  if (heap->purge_next_ms | heap->bcache_scavenge_ms) {
    uint64_t now = mth_clock_ms();
    if (heap->bcache_scavenge_ms && now >= heap->bcache_scavenge_ms) mth_bcache_scavenge(heap, now);
    if (heap->purge_next_ms && now >= heap->purge_next_ms) mth_segments_purge(heap, now, false);
  }
  mth_arena_purge(false);
  if ((heap->ticks & 511) == 0) {
    mth_heaps_collect_abandoned();
    mth_heaps_help_absent(heap);
  }
}

mth_heap_t *mth_heaps_first(void) { return mth_heaps_all; }
bool mth_heaps_trylock(void) { return mth_trylock(&mth_heaps_lock); }
void mth_heaps_unlock(void) { mth_unlock(&mth_heaps_lock); }

void mth_heaps_visit(void (*fn)(mth_heap_t *, void *), void *arg) {
  mth_lock(&mth_heaps_lock);
  for (mth_heap_t *h = mth_heaps_all; h; h = h->all_next) fn(h, arg);
  mth_unlock(&mth_heaps_lock);
}

void mtheap_collect(bool force) {
  mth_heap_t *heap = mth_tls_heap;
  if (heap != &mth_heap_empty) {
    mth_heap_enter(heap);
    mth_heap_drain_remote(heap);
    mth_spans_take_back(heap);
    if (force) mth_heap_release_retained(heap);
    uint64_t now = mth_clock_ms();
    /* what the caches (blocks, freed large spans) held idle goes back as the tick would
     * give it: collect(false) is a tick on demand */
    if (!force && heap->bcache_scavenge_ms && now >= heap->bcache_scavenge_ms) mth_bcache_scavenge(heap, now);
    mth_segments_purge(heap, now, force);
    if (force) mth_segment_release_empty(heap);
    mth_heap_leave(heap);
  }
  mth_heaps_collect_abandoned();
  mth_arena_purge(force);
}

/* Most programs malloc long before this runs; it makes the options (and their warnings) take
 * effect also in one that never does. */
__attribute__((constructor)) static void mth_process_load(void) { mth_process_init(); }

__attribute__((destructor)) static void mth_process_exit(void) {
  if (mth_opt.stats_at_exit) mth_stats_at_exit();
}
