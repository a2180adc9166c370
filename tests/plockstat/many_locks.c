/* 40000 distinct mutexes, each taken and released once: with -H and holdsample=1 that is 40000
 * hold rows, more than the event table held before it was sized for servers (16384). */
#include <pthread.h>

#define NLOCKS 40000
static pthread_mutex_t locks[NLOCKS];

int main(void) {
  for (int i = 0; i < NLOCKS; i++) pthread_mutex_init(&locks[i], NULL);
  for (int i = 0; i < NLOCKS; i++) {
    pthread_mutex_lock(&locks[i]);
    pthread_mutex_unlock(&locks[i]);
  }
  return 0;
}
