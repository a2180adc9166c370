/* Cost of an uncontended pthread_mutex_lock + unlock pair, for the overhead number in
 * docs/PLOCKSTAT.md: run it with and without plockstat and compare.  Prints ns per pair
 * (best of 5 runs).  argv[1]: pairs per run (default 20 million); argv[2] "mt": start an idle
 * second thread first, because glibc takes a cheaper, non-atomic path while a process has only
 * one thread, and programs worth profiling have several. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t bench_lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *idle(void *arg) {
  (void)arg;
  pause();
  return NULL;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 20000000L;
  int mt = argc > 2 && !strcmp(argv[2], "mt");
  if (mt) {
    pthread_t t;
    pthread_create(&t, NULL, idle, NULL);
    pthread_detach(t);
  }
  double best = 1e9;
  for (int run = 0; run < 5; run++) {
    double t0 = now();
    for (long i = 0; i < n; i++) {
      pthread_mutex_lock(&bench_lock);
      __asm__ volatile("" ::: "memory");
      pthread_mutex_unlock(&bench_lock);
    }
    double ns = (now() - t0) * 1e9 / (double)n;
    if (ns < best) best = ns;
  }
  printf("uncontended lock+unlock (%s): %.2f ns/pair\n", mt ? "2 threads" : "1 thread", best);
  return 0;
}
