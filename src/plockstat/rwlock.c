/* rwlock.c: pthread_rwlock_*, with writer-starvation accounting: while a writer waits, every
 * read acquisition that gets in ahead of it is counted on the lock. */
#include "ps.h"

static NOINLINE void reads_during_wwait(pthread_rwlock_t *l) {
  struct linfo *li = li_get((uintptr_t)l, 0);
  if (li && atomic_load_explicit(&li->writers_waiting, memory_order_relaxed) > 0)
    atomic_fetch_add_explicit(&li->reads_while_wwait, 1, memory_order_relaxed);
}

static NOINLINE int rd_slow(struct thr *t, pthread_rwlock_t *l, int r, uintptr_t ra, int how,
                            clockid_t clk, const struct timespec *abst) {
  if (r != EBUSY) return r;
  int owner = ((volatile pthread_rwlock_t *)l)->__data.__cur_writer;
  uintptr_t hpc = owner ? holder_pc(owner, (uintptr_t)l) : 0;
  wait_begin(t, EV_RD_BLOCK, l, NULL, ra, owner, hpc);
  uint64_t t0 = now_ns();
  r = how == HOW_PLAIN ? real.rw_rdlock(l)
    : how == HOW_TIMED ? real.rw_timedrdlock(l, abst) : real.rw_clockrdlock(l, clk, abst);
  uint64_t t1 = now_ns();
  wait_end(t);
  if (r == EDEADLK || r == EINVAL || r == EAGAIN) return r;
  uint64_t ns = t1 - t0;
  record(t, EV_RD_BLOCK, r == ETIMEDOUT ? F_TIMEDOUT : 0, l, LT_RWLOCK, ra, ns);
  if (owner > 0) holder_add((uintptr_t)l, owner, hpc, ns);
  t->lck_ns += ns;
  t->nblock++;
  if (r == 0) {
    t->acq++;
    held_push(t, l, ra, HK_RD);
    if (atomic_load_explicit(&g_wwait_total, memory_order_relaxed)) reads_during_wwait(l);
  }
  return r;
}
static inline int rd_acquire(pthread_rwlock_t *l, uintptr_t ra, int how, clockid_t clk,
                             const struct timespec *abst) {
  GET_THR(t);
  if (UNLIKELY(!t)) {
    if (!real.rw_rdlock) ensure_init();
    return how == HOW_PLAIN ? real.rw_rdlock(l)
         : how == HOW_TIMED ? real.rw_timedrdlock(l, abst) : real.rw_clockrdlock(l, clk, abst);
  }
  int r = real.rw_tryrdlock(l);
  if (LIKELY(r == 0)) {
    t->acq++;
    held_push(t, l, ra, HK_RD);
    if (UNLIKELY(atomic_load_explicit(&g_wwait_total, memory_order_relaxed))) reads_during_wwait(l);
    return 0;
  }
  return rd_slow(t, l, r, ra, how, clk, abst);
}

static NOINLINE int wr_slow(struct thr *t, pthread_rwlock_t *l, int r, uintptr_t ra, int how,
                            clockid_t clk, const struct timespec *abst) {
  if (r != EBUSY) return r;
  int owner = ((volatile pthread_rwlock_t *)l)->__data.__cur_writer;
  if (owner == t->tid)
    return how == HOW_PLAIN ? real.rw_wrlock(l)
         : how == HOW_TIMED ? real.rw_timedwrlock(l, abst) : real.rw_clockwrlock(l, clk, abst);
  uintptr_t hpc = owner ? holder_pc(owner, (uintptr_t)l) : 0;
  enter_tool();
  struct linfo *li = li_get((uintptr_t)l, 1);
  leave_tool(t);
  wait_begin(t, EV_WR_BLOCK, l, NULL, ra, owner, hpc);
  uint64_t t0 = now_ns();
  if (li) {
    if (atomic_fetch_add(&li->writers_waiting, 1) == 0) atomic_store(&li->wwait_start, t0);
    atomic_fetch_add(&g_wwait_total, 1);
  }
  r = how == HOW_PLAIN ? real.rw_wrlock(l)
    : how == HOW_TIMED ? real.rw_timedwrlock(l, abst) : real.rw_clockwrlock(l, clk, abst);
  uint64_t t1 = now_ns();
  wait_end(t);
  if (li) {
    atomic_fetch_sub(&g_wwait_total, 1);
    if (atomic_fetch_sub(&li->writers_waiting, 1) == 1)
      atomic_fetch_add(&li->wwait_busy_ns, t1 - atomic_load(&li->wwait_start));
  }
  if (r == EDEADLK || r == EINVAL) return r;
  uint64_t ns = t1 - t0;
  record(t, EV_WR_BLOCK, r == ETIMEDOUT ? F_TIMEDOUT : 0, l, LT_RWLOCK, ra, ns);
  if (owner > 0) holder_add((uintptr_t)l, owner, hpc, ns);
  t->lck_ns += ns;
  t->nblock++;
  if (r == 0) { t->acq++; held_push(t, l, ra, HK_WR); }
  return r;
}
static inline int wr_acquire(pthread_rwlock_t *l, uintptr_t ra, int how, clockid_t clk,
                             const struct timespec *abst) {
  GET_THR(t);
  if (UNLIKELY(!t)) {
    if (!real.rw_wrlock) ensure_init();
    return how == HOW_PLAIN ? real.rw_wrlock(l)
         : how == HOW_TIMED ? real.rw_timedwrlock(l, abst) : real.rw_clockwrlock(l, clk, abst);
  }
  int r = real.rw_trywrlock(l);
  if (LIKELY(r == 0)) { t->acq++; held_push(t, l, ra, HK_WR); return 0; }
  return wr_slow(t, l, r, ra, how, clk, abst);
}

EXPORT int ps_rw_rdlock(pthread_rwlock_t *l) { return rd_acquire(l, RA, HOW_PLAIN, 0, NULL); }
EXPORT int ps_rw_timedrdlock(pthread_rwlock_t *l, const struct timespec *a) { return rd_acquire(l, RA, HOW_TIMED, 0, a); }
EXPORT int ps_rw_clockrdlock(pthread_rwlock_t *l, clockid_t c, const struct timespec *a) { return rd_acquire(l, RA, HOW_CLOCK, c, a); }
EXPORT int ps_rw_wrlock(pthread_rwlock_t *l) { return wr_acquire(l, RA, HOW_PLAIN, 0, NULL); }
EXPORT int ps_rw_timedwrlock(pthread_rwlock_t *l, const struct timespec *a) { return wr_acquire(l, RA, HOW_TIMED, 0, a); }
EXPORT int ps_rw_clockwrlock(pthread_rwlock_t *l, clockid_t c, const struct timespec *a) { return wr_acquire(l, RA, HOW_CLOCK, c, a); }
EXPORT int ps_rw_tryrdlock(pthread_rwlock_t *l) {
  GET_THR(t);
  if (UNLIKELY(!t)) { if (!real.rw_tryrdlock) ensure_init(); return real.rw_tryrdlock(l); }
  int r = real.rw_tryrdlock(l);
  if (r == 0) {
    t->acq++;
    held_push(t, l, RA, HK_RD);
    if (UNLIKELY(atomic_load_explicit(&g_wwait_total, memory_order_relaxed))) reads_during_wwait(l);
  } else if (r == EBUSY) {
    record(t, EV_TRY_FAIL, 0, l, LT_RWLOCK, RA, 0);
  }
  return r;
}
EXPORT int ps_rw_trywrlock(pthread_rwlock_t *l) {
  GET_THR(t);
  if (UNLIKELY(!t)) { if (!real.rw_trywrlock) ensure_init(); return real.rw_trywrlock(l); }
  int r = real.rw_trywrlock(l);
  if (r == 0) { t->acq++; held_push(t, l, RA, HK_WR); }
  else if (r == EBUSY) record(t, EV_TRY_FAIL, 0, l, LT_RWLOCK, RA, 0);
  return r;
}
EXPORT int ps_rw_unlock(pthread_rwlock_t *l) {
  struct thr *t = tls_thr;
  if (!real.rw_unlock) ensure_init();
  if (t && t->nheld) {
    int hk;
    uint64_t t0 = held_pop(t, l, &hk);
    if (UNLIKELY(t0)) {
      uint64_t t1 = now_ns();
      int r = real.rw_unlock(l);
      hold_record(t, l, hk, RA, t0, t1);
      return r;
    }
  }
  return real.rw_unlock(l);
}
EXPORT int ps_rw_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *a) {
  if (!real.rw_init) ensure_init();
  int r = real.rw_init(l, a);
  if (r == 0) li_init(l, LT_RWLOCK, RA);
  return r;
}


V2(ps_rw_rdlock, pthread_rwlock_rdlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_tryrdlock, pthread_rwlock_tryrdlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_timedrdlock, pthread_rwlock_timedrdlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_clockrdlock, pthread_rwlock_clockrdlock, "GLIBC_2.30", "GLIBC_2.34");
V2(ps_rw_wrlock, pthread_rwlock_wrlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_trywrlock, pthread_rwlock_trywrlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_timedwrlock, pthread_rwlock_timedwrlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_clockwrlock, pthread_rwlock_clockwrlock, "GLIBC_2.30", "GLIBC_2.34");
V2(ps_rw_unlock, pthread_rwlock_unlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_init, pthread_rwlock_init, "GLIBC_2.2.5", "GLIBC_2.34");
