/* Daemonizes as memcached -d does: the parent exits at once, the child (in a new session)
 * blocks on daemon_lock exactly 4 times, then exits.  plockstat must wait for the child and
 * report its blocks. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "hold.h"

pthread_mutex_t daemon_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t held;

static void *holder(void *arg) {
  (void)arg;
  for (int i = 0; i < 4; i++) {
    pthread_mutex_lock(&daemon_lock);
    pthread_barrier_wait(&held);
    ps_hold_until_waited(&daemon_lock);
    pthread_mutex_unlock(&daemon_lock);
    pthread_barrier_wait(&held);
  }
  return NULL;
}

int main(void) {
  pid_t p = fork();
  if (p < 0) return 1;
  if (p > 0) _exit(0); /* the parent: done, as a daemon's launcher is */
  setsid();
  usleep(300 * 1000);  /* plockstat sees the parent gone first */
  pthread_t t;
  pthread_barrier_init(&held, NULL, 2);
  pthread_create(&t, NULL, holder, NULL);
  for (int i = 0; i < 4; i++) {
    pthread_barrier_wait(&held);
    pthread_mutex_lock(&daemon_lock);
    pthread_mutex_unlock(&daemon_lock);
    pthread_barrier_wait(&held);
  }
  pthread_join(t, NULL);
  return 0;
}
