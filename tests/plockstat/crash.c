/* A program that contends on crash_lock exactly BLOCKS times, then ends the way argv[1] says:
 *   abort | segv | quit | usr1 | overflow (main's stack) | kill (SIGKILL after the periodic
 *   write had time to happen) | term-wait (waits up to 30 s for a signal from outside) | exit.
 * plockstat must report the BLOCKS blocks in every case but a kill before the first write. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hold.h"

#define BLOCKS 5
pthread_mutex_t crash_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t held;

static void *holder(void *arg) {
  (void)arg;
  for (int i = 0; i < BLOCKS; i++) {
    pthread_mutex_lock(&crash_lock);
    pthread_barrier_wait(&held);
    ps_hold_until_waited(&crash_lock);
    pthread_mutex_unlock(&crash_lock);
    pthread_barrier_wait(&held);
  }
  return NULL;
}

static int deep(volatile char *p, long n) {
  volatile char buf[4096];
  buf[0] = p ? p[0] : 0;
  return n > (1L << 40) ? 0 : deep(buf, n + 1) + buf[1]; /* ends with SIGSEGV long before */
}

int main(int argc, char **argv) {
  const char *how = argc > 1 ? argv[1] : "exit";
  pthread_t t;
  pthread_barrier_init(&held, NULL, 2);
  pthread_create(&t, NULL, holder, NULL);
  for (int i = 0; i < BLOCKS; i++) {
    pthread_barrier_wait(&held);
    pthread_mutex_lock(&crash_lock);
    pthread_mutex_unlock(&crash_lock);
    pthread_barrier_wait(&held);
  }
  pthread_join(t, NULL);
  if (!strcmp(how, "abort")) abort();
  if (!strcmp(how, "segv")) *(volatile int *)(uintptr_t)8 = 1;
  if (!strcmp(how, "quit")) raise(SIGQUIT);
  if (!strcmp(how, "usr1")) raise(SIGUSR1);
  if (!strcmp(how, "overflow")) return deep(NULL, 0);
  if (!strcmp(how, "kill")) {
    sleep(3); /* the helper thread writes the data once a second */
    raise(SIGKILL);
  }
  if (!strcmp(how, "term-wait")) {
    printf("ready\n");
    fflush(stdout);
    sleep(30);
    return 3;
  }
  return 0;
}
