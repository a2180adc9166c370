/* Expected: double-free of a 72-byte block allocated in make_job, freed by one worker thread in
 * finish_job and again by another. */
#include <pthread.h>
#include <stdlib.h>

static char *make_job(void) { return malloc(72); }

static void *finish_job(void *j) {
  free(j);
  return NULL;
}

static void *finish_again(void *j) {
  free(j); /* BUG: the first worker freed it */
  return NULL;
}

int main(void) {
  char *j = make_job();
  pthread_t a, b;
  pthread_create(&a, NULL, finish_job, j);
  pthread_join(a, NULL);
  pthread_create(&b, NULL, finish_again, j);
  pthread_join(b, NULL);
  return 0;
}
