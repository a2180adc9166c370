/* The quarantine: freed blocks wait here, filled with MTHD_PAT_FREE, before the core may reuse
 * their memory.  A use-after-free write lands in a quarantined block and is found when the block
 * leaves (is about to be reused), by mtheap_check_heap(), by the sweep that every malloc
 * advances (mthd_quarantine_tick: a write is found within about size-of-quarantine / 256 bytes
 * mallocs, not only when its block is evicted), or at exit, when every block still in quarantine
 * is checked (a write soon before exit would otherwise never be seen).
 *
 * Invariants
 *   - one FIFO (oldest first) linked through hdr->next, under mthd_quarantine_lock;
 *   - q_bytes/q_count are the sums over the FIFO and stay within the configured bounds after
 *     every put: evicted blocks are checked and released outside the lock;
 *   - every quarantined block has state QUARANTINED and, with patterns on, all its user bytes
 *     hold MTHD_PAT_FREE unless someone wrote to freed memory;
 *   - q_sweep is NULL or a block in the FIFO (eviction resets it when it takes that block), and
 *     q_credit never exceeds the largest block the quarantine takes, plus one tick's worth.
 */
#include "mthd.h"

MTHD_HIDDEN mthd_lock_t mthd_quarantine_lock;
static mthd_hdr_t *q_head, *q_tail;
static size_t q_bytes, q_count;
static mthd_hdr_t *q_sweep;   /* the next block the per-malloc sweep checks (NULL: the oldest) */
static size_t q_credit;       /* bytes the sweep may scan: MTHD_Q_SWEEP_BYTES per malloc */

/* Bytes of quarantined memory checked per malloc, on average: 16 MiB of quarantine is swept
 * every 64K mallocs at the cost of scanning 256 bytes (a few ns) each. */
#define MTHD_Q_SWEEP_BYTES 256
#define MTHD_Q_SWEEP_EVERY 16

/* Verify a block's free pattern (and its redzones); report a use-after-free write. */
int mthd_pattern_check(mthd_hdr_t *h, const char *when, uintptr_t caller) {
  int errors = 0;
  if (mthd_opt.patterns && !(h->flags & MTHD_F_REPORTED)) {
    uint8_t *user = mthd_user_of(h);
    size_t n = h->size, i = mthd_scan_pattern(user, n, MTHD_PAT_FREE);
    if (i < n) {
      size_t last = n;
      while (last > i && user[last - 1] == MTHD_PAT_FREE) last--;
      last--;
      mthd_out_t o;
      mthd_report_begin(&o, "use-after-free", user + i, "(write to a freed %zu-byte block, offset %zu)", (size_t)h->size, i);
      mthd_printf(&o, "  WRITE after free: bytes %zu..%zu of the block changed while it was in quarantine\n", i, last);
      size_t from = i & ~(size_t)15, show = last + 1 - from;
      if (show < 16) show = 16;
      if (show > 64) show = 64;
      if (from + show > n) show = n - from;
      mthd_printf(&o, "  bytes at %p (block+%zu):\n", (void *)(user + from), from);
      mthd_hexdump(&o, user + from, show, MTHD_PAT_FREE);
      mthd_note_writer_unknown(&o, when, false);
      mthd_print_block(&o, h);
      h->flags |= MTHD_F_REPORTED;
      mthd_report_end(&o, caller, when);
      errors++;
    }
  }
  /* redzones were intact at free; a late overflow write into them is still a bug */
  uint8_t st = h->state;
  h->state = MTHD_LIVE;  /* mthd_block_check reports about live-layout blocks; restore below */
  errors += mthd_block_check(h, when, caller);
  h->state = st;
  return errors;
}

void mthd_quarantine_put(mthd_hdr_t *h) {
  h->next = NULL;
  mthd_hdr_t *evict = NULL, **etail = &evict;
  mthd_lock(&mthd_quarantine_lock);
  if (q_tail) q_tail->next = h;
  else q_head = h;
  q_tail = h;
  q_bytes += h->size;
  q_count++;
  while (q_head && (q_bytes > mthd_opt.quarantine_bytes || q_count > mthd_opt.quarantine_blocks)) {
    mthd_hdr_t *x = q_head;
    q_head = x->next;
    if (!q_head) q_tail = NULL;
    q_bytes -= x->size;
    q_count--;
    if (x == q_sweep) q_sweep = NULL;
    *etail = x;
    etail = &x->next;
  }
  *etail = NULL;
  mthd_unlock(&mthd_quarantine_lock);
  while (evict) {
    mthd_hdr_t *x = evict;
    evict = x->next;
    mthd_pattern_check(x, "reuse of a quarantined block (malloc)", 0);
    mthd_block_release(x);
  }
}

/* Called by every malloc of the program: advance the sweep over the FIFO by the bytes this
 * malloc has earned.  Skipped when another thread holds the lock (that thread is sweeping or
 * putting; the credit waits for the next malloc). */
void mthd_quarantine_tick(uintptr_t caller) {
  /* the lock is taken every MTHD_Q_SWEEP_EVERY mallocs of a thread, with their credit */
  static __thread unsigned skip __attribute__((tls_model("initial-exec")));
  if (++skip < MTHD_Q_SWEEP_EVERY) return;
  if (!mthd_opt.patterns || !__atomic_load_n(&q_head, __ATOMIC_RELAXED)) return;
  if (atomic_exchange_explicit(&mthd_quarantine_lock.v, 1, memory_order_acquire)) return;
  skip = 0;
  q_credit += MTHD_Q_SWEEP_BYTES * MTHD_Q_SWEEP_EVERY;
  if (q_credit > mthd_opt.quarantine_max_block + MTHD_Q_SWEEP_BYTES * MTHD_Q_SWEEP_EVERY)
    q_credit = mthd_opt.quarantine_max_block + MTHD_Q_SWEEP_BYTES * MTHD_Q_SWEEP_EVERY;
  for (int blocks = 0; blocks < 64; blocks++) {
    mthd_hdr_t *h = q_sweep ? q_sweep : q_head;
    if (!h || h->size > q_credit) break;
    q_credit -= h->size ? h->size : 1;
    mthd_pattern_check(h, "a sweep of the quarantine at a malloc", caller);
    q_sweep = h->next;
    if (!q_sweep) break;   /* back to the oldest at the next malloc */
  }
  mthd_unlock(&mthd_quarantine_lock);
}

int mthd_quarantine_check(const char *when, uintptr_t caller) {
  int errors = 0;
  mthd_lock(&mthd_quarantine_lock);
  for (mthd_hdr_t *h = q_head; h; h = h->next) errors += mthd_pattern_check(h, when, caller);
  mthd_unlock(&mthd_quarantine_lock);
  return errors;
}

mthd_hdr_t *mthd_quarantine_find(const void *addr) {
  uintptr_t a = (uintptr_t)addr;
  mthd_hdr_t *found = NULL;
  mthd_lock(&mthd_quarantine_lock);
  for (mthd_hdr_t *h = q_head; h; h = h->next) {
    uintptr_t u = (uintptr_t)mthd_user_of(h);
    if (a >= u && a < u + (h->size ? h->size : 1)) {
      found = h;
      break;
    }
  }
  mthd_unlock(&mthd_quarantine_lock);
  return found;
}
