/* Timed waits that time out.  Each blocked (so it is a block row) but acquired nothing (so it
 * is flagged "timed out" and starts no hold):
 *   tm_lock:  3 x pthread_mutex_timedlock + 1 x pthread_mutex_clocklock, 100 ms each
 *   tm_rw:    1 x pthread_rwlock_timedwrlock
 *   tm_cv:    1 x pthread_cond_clockwait
 *   tm_sem:   1 x sem_timedwait */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <time.h>

pthread_mutex_t tm_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t tm_rw = PTHREAD_RWLOCK_INITIALIZER;
pthread_mutex_t tm_cv_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t tm_cv = PTHREAD_COND_INITIALIZER;
sem_t tm_sem;
static int timeouts;

static struct timespec in_ms(clockid_t c, long ms) {
  struct timespec ts;
  clock_gettime(c, &ts);
  ts.tv_nsec += ms * 1000000L;
  while (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
  return ts;
}

static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < 3; i++) {
    struct timespec ts = in_ms(CLOCK_REALTIME, 100);
    if (pthread_mutex_timedlock(&tm_lock, &ts) == ETIMEDOUT) timeouts++;
  }
  struct timespec ts = in_ms(CLOCK_MONOTONIC, 100);
  if (pthread_mutex_clocklock(&tm_lock, CLOCK_MONOTONIC, &ts) == ETIMEDOUT) timeouts++;
  ts = in_ms(CLOCK_REALTIME, 100);
  if (pthread_rwlock_timedwrlock(&tm_rw, &ts) == ETIMEDOUT) timeouts++;
  return NULL;
}

int main(void) {
  sem_init(&tm_sem, 0, 0);
  pthread_mutex_lock(&tm_lock);
  pthread_rwlock_rdlock(&tm_rw);
  pthread_t t;
  pthread_create(&t, NULL, worker, NULL);
  pthread_join(t, NULL);
  pthread_rwlock_unlock(&tm_rw);
  pthread_mutex_unlock(&tm_lock);

  pthread_mutex_lock(&tm_cv_lock);
  struct timespec ts = in_ms(CLOCK_MONOTONIC, 100);
  if (pthread_cond_clockwait(&tm_cv, &tm_cv_lock, CLOCK_MONOTONIC, &ts) == ETIMEDOUT) timeouts++;
  pthread_mutex_unlock(&tm_cv_lock);
  ts = in_ms(CLOCK_REALTIME, 100);
  if (sem_timedwait(&tm_sem, &ts) != 0 && errno == ETIMEDOUT) timeouts++;
  printf("timeouts=%d\n", timeouts);
  return timeouts == 7 ? 0 : 1;
}
