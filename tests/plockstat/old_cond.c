/* A binary bound to the pre-2.3.2 pthread_cond ABI (pthread_cond_timedwait@GLIBC_2.2.5):
 * plockstat must route it to the old implementation, not the new one. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>

__asm__(".symver old_cond_timedwait,pthread_cond_timedwait@GLIBC_2.2.5");
__asm__(".symver old_cond_init,pthread_cond_init@GLIBC_2.2.5");
__asm__(".symver old_cond_destroy,pthread_cond_destroy@GLIBC_2.2.5");
extern int old_cond_timedwait(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
extern int old_cond_init(pthread_cond_t *, const pthread_condattr_t *);
extern int old_cond_destroy(pthread_cond_t *);

pthread_mutex_t oc_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t oc_cond;

int main(void) {
  old_cond_init(&oc_cond, NULL);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 50 * 1000 * 1000;
  if (ts.tv_nsec >= 1000000000) { ts.tv_sec++; ts.tv_nsec -= 1000000000; }
  pthread_mutex_lock(&oc_lock);
  int r = old_cond_timedwait(&oc_cond, &oc_lock, &ts);
  pthread_mutex_unlock(&oc_lock);
  old_cond_destroy(&oc_cond);
  printf("old cond: %s\n", r == ETIMEDOUT ? "ETIMEDOUT" : "?");
  return r == ETIMEDOUT ? 0 : 1;
}
