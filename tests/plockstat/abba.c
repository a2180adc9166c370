/* Hangs on purpose: two threads take lock_a and lock_b in opposite orders (a deadlock), a
 * third waits on never_cv forever, and main joins them.  Prints "ready" once all three block;
 * plockstat, stopped from outside, must list the three waits and name the deadlock. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER, lock_b = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t never_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t never_cv = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t both;

__attribute__((noinline)) static void *a_then_b(void *arg) {
  (void)arg;
  pthread_mutex_lock(&lock_a);
  pthread_barrier_wait(&both);
  pthread_mutex_lock(&lock_b);
  return NULL;
}
__attribute__((noinline)) static void *b_then_a(void *arg) {
  (void)arg;
  pthread_mutex_lock(&lock_b);
  pthread_barrier_wait(&both);
  pthread_mutex_lock(&lock_a);
  return NULL;
}
__attribute__((noinline)) static void *parked(void *arg) {
  (void)arg;
  pthread_mutex_lock(&never_mutex);
  for (;;) pthread_cond_wait(&never_cv, &never_mutex);
  return NULL;
}

int main(void) {
  pthread_t t[3];
  pthread_barrier_init(&both, NULL, 2);
  pthread_create(&t[0], NULL, a_then_b, NULL);
  pthread_create(&t[1], NULL, b_then_a, NULL);
  pthread_create(&t[2], NULL, parked, NULL);
  usleep(300 * 1000);
  printf("ready\n");
  fflush(stdout);
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  return 0;
}
