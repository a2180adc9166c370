/* Condvar ping-pong: two threads hand a token back and forth 200 times.  Each side waits on
 * its own condition variable, so both cv_ping and cv_pong show up in Condvar wait. */
#include <pthread.h>
#include <stdio.h>

pthread_mutex_t pp_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t cv_ping = PTHREAD_COND_INITIALIZER;
pthread_cond_t cv_pong = PTHREAD_COND_INITIALIZER;
static int turn; /* 0: ping's turn, 1: pong's turn */
#define ROUNDS 200

static void *pong(void *arg) {
  (void)arg;
  for (int i = 0; i < ROUNDS; i++) {
    pthread_mutex_lock(&pp_lock);
    while (turn != 1) pthread_cond_wait(&cv_pong, &pp_lock);
    turn = 0;
    pthread_cond_signal(&cv_ping);
    pthread_mutex_unlock(&pp_lock);
  }
  return NULL;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, pong, NULL);
  for (int i = 0; i < ROUNDS; i++) {
    pthread_mutex_lock(&pp_lock);
    turn = 1;
    pthread_cond_signal(&cv_pong);
    while (turn != 0) pthread_cond_wait(&cv_ping, &pp_lock);
    pthread_mutex_unlock(&pp_lock);
  }
  pthread_join(t, NULL);
  puts("pingpong done");
  return 0;
}
