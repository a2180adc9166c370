/* Legal: no report.  Blocks whose only pointers are where the leak check must still look: the
 * stack of a live thread, a local of main when the program ends with exit() from inside main
 * (main's frames are live then), and a block a finished thread returned to its joiner. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int ready;
void *kept;

static void *hold_on_stack(void *arg) {
  char *volatile mine = malloc(777);
  memset(mine, 1, 777);
  pthread_mutex_lock(&lock);
  ready = 1;
  pthread_cond_signal(&cond);
  pthread_mutex_unlock(&lock);
  for (;;) pause();
  return mine;
}

static void *make_result(void *arg) { return malloc(55); }

int main(void) {
  pthread_t t, q[3];
  void *r[3];
  for (int i = 0; i < 3; i++) pthread_create(&q[i], NULL, make_result, NULL);
  for (int i = 0; i < 3; i++) pthread_join(q[i], &r[i]);
  kept = r[0];
  free(r[1]);
  free(r[2]);
  pthread_create(&t, NULL, hold_on_stack, NULL);
  pthread_mutex_lock(&lock);
  while (!ready) pthread_cond_wait(&cond, &lock);
  pthread_mutex_unlock(&lock);
  char *volatile local = malloc(333);
  memset(local, 2, 333);
  printf("OK\n");
  fflush(stdout);
  exit(0);
}
