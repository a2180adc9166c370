/* thread_footprint: what each thread costs in resident memory once it has allocated.  N threads
 * each malloc one block of SIZE bytes, write it and wait at a barrier; the main thread reads its
 * resident set (/proc/self/statm) before starting them and while all of them wait, and prints
 * the difference per thread (the thread's stack pages included, the same for every allocator).
 *
 *   thread_footprint THREADS SIZE        e.g. LD_PRELOAD=... thread_footprint 64 64
 *
 * A per-thread heap's fixed cost shows here at once, where a benchmark's peak RSS hides it in
 * page-granular noise. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_barrier_t ready, done;

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long size = 0, res = 0;
  if (!f || fscanf(f, "%ld %ld", &size, &res) != 2) {
    fprintf(stderr, "thread_footprint: cannot read /proc/self/statm\n");
    exit(2);
  }
  fclose(f);
  return res * 4;
}

static void *worker(void *arg) {
  size_t size = *(size_t *)arg;
  char *p = malloc(size);
  if (!p) {
    fprintf(stderr, "thread_footprint: malloc(%zu) failed\n", size);
    exit(2);
  }
  memset(p, 1, size);
  pthread_barrier_wait(&ready);
  pthread_barrier_wait(&done);
  free(p);
  return NULL;
}

int main(int argc, char **argv) {
  char *end1 = NULL, *end2 = NULL;
  long n = argc == 3 ? strtol(argv[1], &end1, 10) : 0;
  long size = argc == 3 ? strtol(argv[2], &end2, 10) : 0;
  if (argc != 3 || *end1 || *end2 || n < 1 || n > 4096 || size < 1 || size > (1L << 30)) {
    fprintf(stderr, "usage: thread_footprint THREADS(1..4096) SIZE(1..1073741824)\n");
    return 2;
  }
  size_t sz = (size_t)size;
  pthread_t *t = calloc((size_t)n, sizeof *t);
  if (!t) return 2;
  pthread_barrier_init(&ready, NULL, (unsigned)n + 1);
  pthread_barrier_init(&done, NULL, (unsigned)n + 1);
  long before = rss_kib();
  for (long i = 0; i < n; i++) {
    int e = pthread_create(&t[i], NULL, worker, &sz);
    if (e) {
      fprintf(stderr, "thread_footprint: pthread_create: %s\n", strerror(e));
      return 2;
    }
  }
  pthread_barrier_wait(&ready);
  long with = rss_kib();
  pthread_barrier_wait(&done);
  for (long i = 0; i < n; i++) pthread_join(t[i], NULL);
  printf("threads %ld, %ld-byte block each: RSS %ld KiB before, %ld KiB with them: %.1f KiB per thread\n",
         n, size, before, with, (double)(with - before) / (double)n);
  free(t);
  return 0;
}
