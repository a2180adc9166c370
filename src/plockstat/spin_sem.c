/* spin_sem.c: pthread_spin_* and sem_*: spins and semaphore waits are timed only when the
 * try variant fails. */
#include "ps.h"

EXPORT int ps_spin_lock(pthread_spinlock_t *s) {
  GET_THR(t);
  if (!real.spin_lock) ensure_init();
  if (UNLIKELY(!t)) return real.spin_lock(s);
  if (LIKELY(real.spin_trylock(s) == 0)) { t->acq++; return 0; }
  wait_begin(t, EV_SPIN_BLOCK, (void *)s, NULL, RA, 0, 0);
  uint64_t t0 = now_ns();
  int r = real.spin_lock(s);
  uint64_t t1 = now_ns();
  wait_end(t);
  record(t, EV_SPIN_BLOCK, 0, (void *)s, LT_SPIN, RA, t1 - t0);
  t->lck_ns += t1 - t0;
  t->nblock++;
  t->acq++;
  return r;
}
EXPORT int ps_spin_trylock(pthread_spinlock_t *s) {
  GET_THR(t);
  if (!real.spin_trylock) ensure_init();
  int r = real.spin_trylock(s);
  if (t) { if (r == 0) t->acq++; else if (r == EBUSY) record(t, EV_TRY_FAIL, 0, (void *)s, LT_SPIN, RA, 0); }
  return r;
}
EXPORT int ps_spin_unlock(pthread_spinlock_t *s) {
  if (!real.spin_unlock) ensure_init();
  return real.spin_unlock(s);
}
EXPORT int ps_spin_init(pthread_spinlock_t *s, int pshared) {
  if (!real.spin_init) ensure_init();
  int r = real.spin_init(s, pshared);
  if (r == 0) li_init((const void *)s, LT_SPIN, RA);
  return r;
}

static int sem_common(sem_t *s, uintptr_t ra, int how, clockid_t clk, const struct timespec *a) {
  GET_THR(t);
  if (!real.sem_wait) ensure_init();
  if (t) {
    int e = errno;
    if (real.sem_trywait(s) == 0) { errno = e; return 0; }
    if (errno != EAGAIN) { t = NULL; }
    errno = e;
  }
  if (t) wait_begin(t, EV_SEM_WAIT, s, NULL, ra, 0, 0);
  uint64_t t0 = t ? now_ns() : 0;
  int r = how == HOW_PLAIN ? real.sem_wait(s)
        : how == HOW_TIMED ? real.sem_timedwait(s, a) : real.sem_clockwait(s, clk, a);
  if (t) {
    int e = errno;
    uint64_t t1 = now_ns();
    wait_end(t);
    record(t, EV_SEM_WAIT, (r != 0 && e == ETIMEDOUT) ? F_TIMEDOUT : 0, s, LT_SEM, ra, t1 - t0);
    t->lck_ns += t1 - t0;
    t->nblock++;
    errno = e;
  }
  return r;
}
EXPORT int ps_sem_wait(sem_t *s) { return sem_common(s, RA, HOW_PLAIN, 0, NULL); }
EXPORT int ps_sem_timedwait(sem_t *s, const struct timespec *a) { return sem_common(s, RA, HOW_TIMED, 0, a); }
EXPORT int ps_sem_clockwait(sem_t *s, clockid_t c, const struct timespec *a) { return sem_common(s, RA, HOW_CLOCK, c, a); }
EXPORT int ps_sem_init(sem_t *s, int pshared, unsigned v) {
  if (!real.sem_init) ensure_init();
  int r = real.sem_init(s, pshared, v);
  if (r == 0) li_init(s, LT_SEM, RA);
  return r;
}


V2(ps_spin_lock, pthread_spin_lock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_spin_trylock, pthread_spin_trylock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_spin_unlock, pthread_spin_unlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_spin_init, pthread_spin_init, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_sem_wait, sem_wait, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_sem_timedwait, sem_timedwait, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_sem_clockwait, sem_clockwait, "GLIBC_2.30", "GLIBC_2.34");
V2(ps_sem_init, sem_init, "GLIBC_2.2.5", "GLIBC_2.34");
