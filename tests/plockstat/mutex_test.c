/* The reference's mutex_test.c (Sun blog on plockstat), sleeping 1 s instead of 10: three
 * threads block on the global `mp` held by main.  Expected: Mutex block, Count 3, lock
 * mutex_test`mp, caller mutex_test`func+0x.. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *func(void *);
pthread_mutex_t mp;

int main(void) {
  pthread_t tid1, tid2, tid3;
  pthread_mutex_init(&mp, NULL);
  pthread_mutex_lock(&mp);
  pthread_create(&tid1, NULL, func, NULL);
  pthread_create(&tid2, NULL, func, NULL);
  pthread_create(&tid3, NULL, func, NULL);
  sleep(1); /* you should not do this. */
  pthread_mutex_unlock(&mp);
  pthread_join(tid1, NULL);
  pthread_join(tid2, NULL);
  pthread_join(tid3, NULL);
  pthread_mutex_destroy(&mp);
  exit(0);
}

void *func(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mp);
  puts("done");
  pthread_mutex_unlock(&mp);
  pthread_exit(0);
}
