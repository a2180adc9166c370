/* C11 threads: mtx_lock does not go through pthread_mutex_lock, so plockstat interposes
 * mtx_* and cnd_* themselves.  Two threads block on c11_lock held by main for 300 ms; one
 * cnd_timedwait times out. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <threads.h>
#include <time.h>

mtx_t c11_lock;
mtx_t c11_cv_lock;
cnd_t c11_cv;

static atomic_int arrived;

static int worker(void *arg) {
  (void)arg;
  atomic_fetch_add(&arrived, 1);
  mtx_lock(&c11_lock);
  mtx_unlock(&c11_lock);
  return 0;
}

int main(void) {
  mtx_init(&c11_lock, mtx_plain);
  mtx_init(&c11_cv_lock, mtx_plain);
  cnd_init(&c11_cv);
  mtx_lock(&c11_lock);
  thrd_t a, b;
  thrd_create(&a, worker, NULL);
  thrd_create(&b, worker, NULL);
  /* Both workers started, and one sleeps in the lock (glibc: __lock == 2); the sleep gives
   * the second one time to follow. */
  struct timespec d = { 0, 1000 * 1000 };
  pthread_mutex_t *pm = (pthread_mutex_t *)(void *)&c11_lock;
  for (int i = 0; i < 10000 && (atomic_load(&arrived) < 2 || __atomic_load_n(&pm->__data.__lock, __ATOMIC_ACQUIRE) != 2); i++)
    thrd_sleep(&d, NULL);
  d.tv_nsec = 200 * 1000 * 1000;
  thrd_sleep(&d, NULL);
  mtx_unlock(&c11_lock);
  thrd_join(a, NULL);
  thrd_join(b, NULL);

  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  ts.tv_nsec += 50 * 1000 * 1000;
  if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
  mtx_lock(&c11_cv_lock);
  int r = cnd_timedwait(&c11_cv, &c11_cv_lock, &ts);
  mtx_unlock(&c11_cv_lock);
  printf("c11 done %s\n", r == thrd_timedout ? "timedout" : "?");
  return 0;
}
