/* Recursive, robust and error-checking mutexes.
 *  rec_lock:    main takes it 3 times (recursive); a worker blocks on it once.
 *  robust_lock: a thread dies holding it; main gets EOWNERDEAD, makes it consistent.
 *  ec_lock:     error-checking; main relocks it (EDEADLK, no wait) and a trylock fails. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

pthread_mutex_t rec_lock;
pthread_mutex_t robust_lock;
pthread_mutex_t ec_lock;

static void *rec_worker(void *arg) {
  (void)arg;
  pthread_mutex_lock(&rec_lock);
  pthread_mutex_unlock(&rec_lock);
  return NULL;
}
static void *die_holding(void *arg) {
  (void)arg;
  pthread_mutex_lock(&robust_lock);
  return NULL; /* exits with the lock held */
}
static void *ec_try(void *arg) {
  (void)arg;
  int r = pthread_mutex_trylock(&ec_lock);
  return (void *)(long)r;
}

int main(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&rec_lock, &a);
  pthread_mutexattr_destroy(&a);
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&robust_lock, &a);
  pthread_mutexattr_destroy(&a);
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutex_init(&ec_lock, &a);
  pthread_mutexattr_destroy(&a);

  pthread_mutex_lock(&rec_lock);
  pthread_mutex_lock(&rec_lock);
  pthread_mutex_lock(&rec_lock);
  pthread_t t;
  pthread_create(&t, NULL, rec_worker, NULL);
  /* glibc marks a mutex with a sleeping waiter by __lock == 2 */
  for (int i = 0; i < 10000 && __atomic_load_n(&rec_lock.__data.__lock, __ATOMIC_ACQUIRE) != 2; i++)
    usleep(1000);
  usleep(50 * 1000);
  pthread_mutex_unlock(&rec_lock);
  pthread_mutex_unlock(&rec_lock);
  pthread_mutex_unlock(&rec_lock);
  pthread_join(t, NULL);

  pthread_create(&t, NULL, die_holding, NULL);
  pthread_join(t, NULL);
  int r = pthread_mutex_lock(&robust_lock);
  if (r == EOWNERDEAD) pthread_mutex_consistent(&robust_lock);
  pthread_mutex_unlock(&robust_lock);

  pthread_mutex_lock(&ec_lock);
  int r2 = pthread_mutex_lock(&ec_lock);
  void *tr;
  pthread_create(&t, NULL, ec_try, NULL);
  pthread_join(t, &tr);
  pthread_mutex_unlock(&ec_lock);
  printf("robust=%s errorcheck=%s trylock=%s\n", r == EOWNERDEAD ? "EOWNERDEAD" : "?",
         r2 == EDEADLK ? "EDEADLK" : "?", (long)tr == EBUSY ? "EBUSY" : "?");
  return 0;
}
