/* cond.c: pthread_cond_* (both glibc ABIs) and C11 cnd_*: a wait releases the mutex inside
 * libc, so the hold ends before the wait and a new one starts after it. */
#include "ps.h"

enum { CV_NEW, CV_NEW_TIMED, CV_CLOCK, CV_OLD, CV_OLD_TIMED, CV_C11, CV_C11_TIMED };
static int cv_call(int v, void *c, void *m, clockid_t clk, const struct timespec *a) {
  switch (v) {
  case CV_NEW: return real.cond_wait(c, m);
  case CV_NEW_TIMED: return real.cond_timedwait(c, m, a);
  case CV_CLOCK: return real.cond_clockwait(c, m, clk, a);
  case CV_OLD: return real.cond_wait_old(c, m);
  case CV_OLD_TIMED: return real.cond_timedwait_old(c, m, a);
  case CV_C11: return real.cnd_wait(c, m);
  default: return real.cnd_timedwait(c, m, a);
  }
}
static int cv_wait(int v, void *c, void *m, clockid_t clk, const struct timespec *a, uintptr_t ra) {
  GET_THR(t);
  if (!real.cond_wait) ensure_init();
  if (UNLIKELY(!t)) return cv_call(v, c, m, clk, a);
  /* The wait releases the mutex inside libc and re-takes it there: end the hold here and
   * start a new one on return. */
  int hk = HK_MUTEX;
  uint64_t h0 = t->nheld ? held_pop(t, m, &hk) : 0;
  uint64_t t0 = now_ns();
  if (h0) hold_record(t, m, hk, ra, h0, t0);
  wait_begin(t, EV_COND_WAIT, c, m, ra, 0, 0);
  int r = cv_call(v, c, m, clk, a);
  uint64_t t1 = now_ns();
  wait_end(t);
  int c11 = v == CV_C11 || v == CV_C11_TIMED;
  int timedout = c11 ? r == thrd_timedout : r == ETIMEDOUT;
  record(t, EV_COND_WAIT, timedout ? F_TIMEDOUT : 0, c, c11 ? LT_CND : LT_COND, ra, t1 - t0);
  t->cvw_ns += t1 - t0;
  t->ncvw++;
  if (c11 ? (r == thrd_success || r == thrd_timedout) : (r == 0 || r == ETIMEDOUT || r == EOWNERDEAD))
    held_push(t, m, ra, HK_MUTEX);
  return r;
}
EXPORT int ps_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) { return cv_wait(CV_NEW, c, m, 0, NULL, RA); }
EXPORT int ps_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *a) {
  return cv_wait(CV_NEW_TIMED, c, m, 0, a, RA);
}
EXPORT int ps_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t k, const struct timespec *a) {
  return cv_wait(CV_CLOCK, c, m, k, a, RA);
}
EXPORT int ps_cond_wait_old(pthread_cond_t *c, pthread_mutex_t *m) { return cv_wait(CV_OLD, c, m, 0, NULL, RA); }
EXPORT int ps_cond_timedwait_old(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *a) {
  return cv_wait(CV_OLD_TIMED, c, m, 0, a, RA);
}

EXPORT int ps_cnd_wait(cnd_t *c, mtx_t *m) { return cv_wait(CV_C11, c, m, 0, NULL, RA); }
EXPORT int ps_cnd_timedwait(cnd_t *__restrict c, mtx_t *__restrict m, const struct timespec *__restrict a) {
  return cv_wait(CV_C11_TIMED, c, m, 0, a, RA);
}


V1(ps_cond_wait, pthread_cond_wait, "GLIBC_2.3.2");
V1(ps_cond_timedwait, pthread_cond_timedwait, "GLIBC_2.3.2");
__asm__(".symver ps_cond_wait_old,pthread_cond_wait@GLIBC_2.2.5");
__asm__(".symver ps_cond_timedwait_old,pthread_cond_timedwait@GLIBC_2.2.5");
V2(ps_cond_clockwait, pthread_cond_clockwait, "GLIBC_2.30", "GLIBC_2.34");
V2(ps_cnd_wait, cnd_wait, "GLIBC_2.28", "GLIBC_2.34");
V2(ps_cnd_timedwait, cnd_timedwait, "GLIBC_2.28", "GLIBC_2.34");
