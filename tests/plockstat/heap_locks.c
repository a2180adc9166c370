/* Locks made on the heap by one function, as pigz's new_lock_ makes them: two lock objects
 * (a mutex and a condition variable each) from new_lock, called from setup.  The first is
 * blocked on 3 times, the second 5 times; their condition variables are waited on 2 and 4
 * times.  Each must get its own name, the same in every run.  The counts must not depend on
 * scheduling (ctest runs this beside the stress tests on two cores): the holder lets go only
 * once main is queued on the mutex, and the signaller bumps the value only while main waits. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "hold.h"

struct lock { pthread_mutex_t mutex; pthread_cond_t cond; int value, waiting; };

__attribute__((noinline)) static struct lock *new_lock(void) {
  struct lock *l = malloc(sizeof *l);
  pthread_mutex_init(&l->mutex, NULL);
  pthread_cond_init(&l->cond, NULL);
  l->value = 0;
  l->waiting = 0;
  return l;
}

static struct lock *first, *second;
static pthread_barrier_t held;

/* Makes main block on l->mutex `blocks` times. */
static void *holder(void *arg) {
  struct lock *l = arg;
  int blocks = l == first ? 3 : 5;
  for (int i = 0; i < blocks; i++) {
    pthread_mutex_lock(&l->mutex);
    pthread_barrier_wait(&held);
    ps_hold_until_waited(&l->mutex);   /* a 10 ms sleep let a descheduled main find it free */
    pthread_mutex_unlock(&l->mutex);
    pthread_barrier_wait(&held);
  }
  return NULL;
}
static void contend(struct lock *l) {
  int blocks = l == first ? 3 : 5;
  pthread_t t;
  pthread_create(&t, NULL, holder, l);
  for (int i = 0; i < blocks; i++) {
    pthread_barrier_wait(&held);
    pthread_mutex_lock(&l->mutex);
    pthread_mutex_unlock(&l->mutex);
    pthread_barrier_wait(&held);
  }
  pthread_join(t, NULL);
}

/* Makes main wait on l->cond `waits` times: a signaller bumps value each 5 ms. */
static void *signaller(void *arg) {
  struct lock *l = arg;
  int waits = l == first ? 2 : 4;
  for (int i = 0; i < waits; i++) {
    usleep(5 * 1000);
    pthread_mutex_lock(&l->mutex);
    /* only while main is in pthread_cond_wait (it sets waiting under the mutex, which the
     * wait releases): a bump made while main was late would be one wait fewer */
    while (!l->waiting) {
      pthread_mutex_unlock(&l->mutex);
      usleep(1000);
      pthread_mutex_lock(&l->mutex);
    }
    l->waiting = 0;
    l->value++;
    pthread_cond_signal(&l->cond);
    pthread_mutex_unlock(&l->mutex);
  }
  return NULL;
}
static void wait_on(struct lock *l) {
  int waits = l == first ? 2 : 4;
  pthread_t t;
  pthread_mutex_lock(&l->mutex);
  l->value = 0;
  pthread_create(&t, NULL, signaller, l);
  for (int seen = 0; seen < waits; seen++) {
    while (l->value <= seen) {
      l->waiting = 1;
      pthread_cond_wait(&l->cond, &l->mutex);
    }
  }
  pthread_mutex_unlock(&l->mutex);
  pthread_join(t, NULL);
}

__attribute__((noinline)) static void setup(void) {
  static volatile int n = 2; /* not unrolled: one call site makes both, #1 and #2 */
  struct lock *made[2];
  for (int i = 0; i < n; i++) made[i] = new_lock();
  first = made[0];
  second = made[1];
}

int main(void) {
  pthread_barrier_init(&held, NULL, 2);
  setup();
  contend(first);
  contend(second);
  wait_on(first);
  wait_on(second);
  return 0;
}
