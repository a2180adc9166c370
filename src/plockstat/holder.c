/* holder.c: hold times (sampled 1 in holdsample acquisitions in -H mode) and who held a
 * contended lock, read from the holder's held-lock stack or from the lock it released last. */
#include "ps.h"

void hold_sample(struct thr *t, struct held *h) {
  t->hold_cd = g_mode_hold ? g_hold_period : (1 << 30);
  if (g_mode_hold) h->t0 = now_ns();
}
void hold_record(struct thr *t, const void *lock, int hk, uintptr_t ra,
                 uint64_t t0, uint64_t t1) {
  int kind = hk == HK_RD ? EV_RD_HOLD : hk == HK_WR ? EV_WR_HOLD : EV_MUTEX_HOLD;
  int lt = hk == HK_MUTEX ? LT_MUTEX : LT_RWLOCK;
  record(t, kind, 0, lock, lt, ra, t1 - t0);
}

/* Who holds `lock` right now, and where did they take it?  Reads another thread's record
 * without synchronization: a stale answer is possible and harmless. */
uintptr_t holder_pc(int tid, uintptr_t lock) {
  struct thr *o = thr_by_tid(tid);
  if (!o) return 0;
  int n = ((volatile struct thr *)o)->nheld;
  if (n > HELD_MAX) n = HELD_MAX;
  for (int i = n - 1; i >= 0; i--) {
    volatile struct held *h = &o->held[i];
    if (h->lock == lock) return h->pc;
  }
  /* released already: where it had been holding it */
  volatile struct thr *vo = o;
  if (vo->rel_lock == lock) return vo->rel_pc;
  return 0;
}

