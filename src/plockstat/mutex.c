/* mutex.c: pthread_mutex_* and C11 mtx_*: the uncontended path is one trylock and two TLS
 * stores; only a failed trylock is timed, in mutex_slow. */
#include "ps.h"

/* ---- pthread mutexes --------------------------------------------------------------------- */
static NOINLINE int mutex_slow(struct thr *t, pthread_mutex_t *m, int r, uintptr_t ra, int how,
                               clockid_t clk, const struct timespec *abst, int ltype) {
  if (r == EOWNERDEAD) {
    t->acq++;
    held_push(t, m, ra, HK_MUTEX);
    record(t, EV_OWNER_DEAD, 0, m, ltype, ra, 0);
    return r;
  }
  if (r != EBUSY) return r;
  int owner = ((volatile pthread_mutex_t *)m)->__data.__owner;
  if (owner == t->tid) { /* error-checking self-deadlock or a real one: nothing to time */
    return how == HOW_PLAIN ? real.mutex_lock(m)
         : how == HOW_TIMED ? real.mutex_timedlock(m, abst) : real.mutex_clocklock(m, clk, abst);
  }
  uintptr_t hpc = holder_pc(owner, (uintptr_t)m);
  wait_begin(t, EV_MUTEX_BLOCK, m, NULL, ra, owner, hpc);
  uint64_t t0 = now_ns();
  r = how == HOW_PLAIN ? real.mutex_lock(m)
    : how == HOW_TIMED ? real.mutex_timedlock(m, abst) : real.mutex_clocklock(m, clk, abst);
  uint64_t t1 = now_ns();
  wait_end(t);
  if (r == EDEADLK || r == EINVAL || r == ENOTRECOVERABLE) return r;
  uint64_t ns = t1 - t0;
  /* A timed-out wait did block: it counts as a block, flagged, but it acquired nothing. */
  record(t, EV_MUTEX_BLOCK, r == ETIMEDOUT ? F_TIMEDOUT : 0, m, ltype, ra, ns);
  if (owner > 0) holder_add((uintptr_t)m, owner, hpc, ns);
  t->lck_ns += ns;
  t->nblock++;
  if (r == 0 || r == EOWNERDEAD) {
    t->acq++;
    held_push(t, m, ra, HK_MUTEX);
    if (r == EOWNERDEAD) record(t, EV_OWNER_DEAD, 0, m, ltype, ra, 0);
  }
  return r;
}

static inline int mutex_acquire(pthread_mutex_t *m, uintptr_t ra, int how, clockid_t clk,
                                 const struct timespec *abst) {
  GET_THR(t);
  if (UNLIKELY(!t)) {
    if (how == HOW_PLAIN) return REAL(mutex_lock, __pthread_mutex_lock)(m);
    if (!real.mutex_timedlock) ensure_init();
    return how == HOW_TIMED ? real.mutex_timedlock(m, abst) : real.mutex_clocklock(m, clk, abst);
  }
  /* With one thread there is nobody to wait for, and glibc's lock then skips the atomic
   * instruction that trylock always pays: take the lock directly.  Not for process-shared
   * mutexes (kind bit 128), where another process may hold it. */
  int r = (how == HOW_PLAIN && __libc_single_threaded && !(m->__data.__kind & 128))
              ? real.mutex_lock(m) : real.mutex_trylock(m);
  if (LIKELY(r == 0)) {
    t->acq++;
    held_push(t, m, ra, HK_MUTEX);
    return 0;
  }
  return mutex_slow(t, m, r, ra, how, clk, abst, LT_MUTEX);
}

EXPORT int pthread_mutex_lock(pthread_mutex_t *m) { return mutex_acquire(m, RA, HOW_PLAIN, 0, NULL); }
EXPORT int ps_mutex_timedlock(pthread_mutex_t *m, const struct timespec *a) {
  return mutex_acquire(m, RA, HOW_TIMED, 0, a);
}
EXPORT int ps_mutex_clocklock(pthread_mutex_t *m, clockid_t c, const struct timespec *a) {
  return mutex_acquire(m, RA, HOW_CLOCK, c, a);
}
EXPORT int ps_mutex_trylock(pthread_mutex_t *m) {
  GET_THR(t);
  if (UNLIKELY(!t)) return REAL(mutex_trylock, __pthread_mutex_trylock)(m);
  int r = real.mutex_trylock(m);
  if (LIKELY(r == 0)) { t->acq++; held_push(t, m, RA, HK_MUTEX); return 0; }
  if (r == EBUSY) record(t, EV_TRY_FAIL, 0, m, LT_MUTEX, RA, 0);
  else if (r == EOWNERDEAD) { t->acq++; held_push(t, m, RA, HK_MUTEX); record(t, EV_OWNER_DEAD, 0, m, LT_MUTEX, RA, 0); }
  return r;
}
EXPORT int pthread_mutex_unlock(pthread_mutex_t *m) {
  struct thr *t = tls_thr;
  if (t && t->nheld) {
    int hk;
    uint64_t t0 = held_pop(t, m, &hk);
    if (UNLIKELY(t0)) {
      uint64_t t1 = now_ns();
      int r = real.mutex_unlock(m);
      hold_record(t, m, hk, RA, t0, t1);
      return r;
    }
  }
  return REAL(mutex_unlock, __pthread_mutex_unlock)(m);
}
EXPORT int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a) {
  if (!real.mutex_init) ensure_init();
  int r = real.mutex_init(m, a);
  if (r == 0) li_init(m, LT_MUTEX, RA);
  return r;
}


/* ---- C11 mtx_*: these do not go through the pthread symbols ------------------------------ */
static int mtx_acquire(mtx_t *m, uintptr_t ra, const struct timespec *a, int timed) {
  GET_THR(t);
  if (!real.mtx_lock) ensure_init();
  if (UNLIKELY(!t)) return timed ? real.mtx_timedlock(m, a) : real.mtx_lock(m);
  int r = real.mtx_trylock(m);
  if (LIKELY(r == thrd_success)) { t->acq++; held_push(t, m, ra, HK_MUTEX); return r; }
  if (r != thrd_busy) return r;
  int owner = ((volatile pthread_mutex_t *)(void *)m)->__data.__owner;
  uintptr_t hpc = holder_pc(owner, (uintptr_t)m);
  wait_begin(t, EV_MUTEX_BLOCK, m, NULL, ra, owner, hpc);
  uint64_t t0 = now_ns();
  r = timed ? real.mtx_timedlock(m, a) : real.mtx_lock(m);
  uint64_t t1 = now_ns();
  wait_end(t);
  if (r == thrd_error) return r;
  record(t, EV_MUTEX_BLOCK, r == thrd_timedout ? F_TIMEDOUT : 0, m, LT_MTX, ra, t1 - t0);
  if (owner > 0) holder_add((uintptr_t)m, owner, hpc, t1 - t0);
  t->lck_ns += t1 - t0;
  t->nblock++;
  if (r == thrd_success) { t->acq++; held_push(t, m, ra, HK_MUTEX); }
  return r;
}
EXPORT int ps_mtx_lock(mtx_t *m) { return mtx_acquire(m, RA, NULL, 0); }
EXPORT int ps_mtx_timedlock(mtx_t *__restrict m, const struct timespec *__restrict a) { return mtx_acquire(m, RA, a, 1); }
EXPORT int ps_mtx_trylock(mtx_t *m) {
  GET_THR(t);
  if (!real.mtx_trylock) ensure_init();
  int r = real.mtx_trylock(m);
  if (t) {
    if (r == thrd_success) { t->acq++; held_push(t, m, RA, HK_MUTEX); }
    else if (r == thrd_busy) record(t, EV_TRY_FAIL, 0, m, LT_MTX, RA, 0);
  }
  return r;
}
EXPORT int ps_mtx_unlock(mtx_t *m) {
  struct thr *t = tls_thr;
  if (!real.mtx_unlock) ensure_init();
  if (t && t->nheld) {
    int hk;
    uint64_t t0 = held_pop(t, m, &hk);
    if (UNLIKELY(t0)) {
      uint64_t t1 = now_ns();
      int r = real.mtx_unlock(m);
      hold_record(t, m, hk, RA, t0, t1);
      return r;
    }
  }
  return real.mtx_unlock(m);
}
EXPORT int ps_mtx_init(mtx_t *m, int type) {
  if (!real.mtx_init) ensure_init();
  int r = real.mtx_init(m, type);
  if (r == thrd_success) li_init(m, LT_MTX, RA);
  return r;
}

V2(ps_mutex_trylock, pthread_mutex_trylock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_mutex_timedlock, pthread_mutex_timedlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_mutex_clocklock, pthread_mutex_clocklock, "GLIBC_2.30", "GLIBC_2.34");
V2(ps_mtx_lock, mtx_lock, "GLIBC_2.28", "GLIBC_2.34");
V2(ps_mtx_timedlock, mtx_timedlock, "GLIBC_2.28", "GLIBC_2.34");
V2(ps_mtx_trylock, mtx_trylock, "GLIBC_2.28", "GLIBC_2.34");
V2(ps_mtx_unlock, mtx_unlock, "GLIBC_2.28", "GLIBC_2.34");
V2(ps_mtx_init, mtx_init, "GLIBC_2.28", "GLIBC_2.34");
