/* cache-thrash: active false sharing (Hoard's cache-thrash, from its description).  Each thread
 * allocates a small object, writes it many times, frees it, and repeats.  If the allocator gives
 * threads objects from the same cache line, the writes bounce the line between cores.  The
 * previous object is freed after the next one is allocated (two live per thread) so the
 * self-check spans a malloc. */
#include "../common.h"

static const char *W = "cache-thrash";
static long long nthreads = 1, iters = 1000, reps = 2000, size = 8;

static void *worker(void *arg) {
  int id = ((struct bench_tid *)arg)->id;
  bench_write_objects(W, (size_t)size, iters, reps, bench_mix((uint64_t)id + 3) << 24);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads"},
      {'i', "iterations", BOPT_INT, &iters, NULL, 1, 1000000000, "objects each thread allocates"},
      {'r', "repetitions", BOPT_INT, &reps, NULL, 1, 1000000000, "writes to each object"},
      {'s', "size", BOPT_INT, &size, NULL, 1, 1 << 20, "object size"},
      {0}};
  bench_parse(argc, argv, W, "Active false sharing: threads allocate small objects and write them repeatedly.", opts);
  double dt = bench_timed_workers(W, (int)nthreads, worker);
  bench_time_result(W, nthreads, dt, (double)nthreads * (double)iters);
  return 0;
}
