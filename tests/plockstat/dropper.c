/* Contends on drop_lock exactly 3 times, then gives up root for nobody (as memcached -u and
 * other servers do) and exits: its data file is written after the drop. */
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "hold.h"

pthread_mutex_t drop_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t held;

static void *holder(void *arg) {
  (void)arg;
  for (int i = 0; i < 3; i++) {
    pthread_mutex_lock(&drop_lock);
    pthread_barrier_wait(&held);
    ps_hold_until_waited(&drop_lock);
    pthread_mutex_unlock(&drop_lock);
    pthread_barrier_wait(&held);
  }
  return NULL;
}

int main(void) {
  pthread_t t;
  pthread_barrier_init(&held, NULL, 2);
  pthread_create(&t, NULL, holder, NULL);
  for (int i = 0; i < 3; i++) {
    pthread_barrier_wait(&held);
    pthread_mutex_lock(&drop_lock);
    pthread_mutex_unlock(&drop_lock);
    pthread_barrier_wait(&held);
  }
  pthread_join(t, NULL);
  if (getuid() == 0 && (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)) {
    perror("dropper: cannot become nobody");
    return 2;
  }
  return 0;
}
