/* threadtest: Hoard's classic scalability test, from its published description: every thread
 * repeatedly allocates its share of N small objects, then frees them all.  No sharing at all:
 * an allocator that scales shows flat time as threads are added (up to the core count). */
#include "../common.h"

static const char *W = "threadtest";
static long long nthreads = 1, iters = 50, nobjects = 30000, size = 8;


static void *worker(void *a) {
  int id = ((struct bench_tid *)a)->id;
  long long n = nobjects / nthreads;
  if (n < 1) n = 1;
  void **p = malloc((size_t)n * sizeof *p);
  if (!p) bench_oom(W, (size_t)n * sizeof *p);
  for (long long i = 0; i < iters; i++) {
    uint64_t base = bench_mix(((uint64_t)id << 40) ^ (uint64_t)i);
    for (long long j = 0; j < n; j++) p[j] = bench_alloc((size_t)size, base + (uint64_t)j, W);
    for (long long j = 0; j < n; j++) bench_release(p[j], (size_t)size, base + (uint64_t)j, W);
  }
  free(p);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads"},
      {'i', "iterations", BOPT_INT, &iters, NULL, 1, 100000000, "allocate-all/free-all rounds"},
      {'n', "objects", BOPT_INT, &nobjects, NULL, 1, 1000000000, "objects per round, split over the threads"},
      {'s', "size", BOPT_INT, &size, NULL, 1, 1 << 24, "object size in bytes"},
      {0}};
  bench_parse(argc, argv, W, "Hoard's threadtest: each thread allocates N/T objects and frees them, I times.", opts);
  double dt = bench_timed_workers(W, (int)nthreads, worker);
  bench_time_result(W, nthreads, dt, (double)iters * (double)(nobjects / nthreads > 0 ? nobjects / nthreads : 1) * (double)nthreads);
  return 0;
}
