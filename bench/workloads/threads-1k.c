/* threads-1k: every thread does N malloc(1024)/free pairs (the 1 KiB thread-scaling test of
 * reference 001).  Each iteration frees the block of the previous iteration after allocating
 * the next one, so two blocks per thread are live: the self-check then spans another malloc
 * call, which is where a broken allocator would hand out or scribble on a live block. */
#include "../common.h"

static const char *W = "threads-1k";
static long long nthreads = 1, iters = 1000000, size = 1024;


static void *worker(void *a) {
  int id = ((struct bench_tid *)a)->id;
  uint64_t base = bench_mix((uint64_t)id + 1) << 20;
  size_t n = (size_t)size;
  void *prev = bench_alloc(n, base, W);
  for (long long i = 1; i < iters; i++) {
    void *p = bench_alloc(n, base + (uint64_t)i, W);
    bench_release(prev, n, base + (uint64_t)i - 1, W);
    prev = p;
  }
  bench_release(prev, n, base + (uint64_t)iters - 1, W);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads"},
      {'i', "iterations", BOPT_INT, &iters, NULL, 1, 1000000000000LL, "malloc/free pairs per thread"},
      {'s', "size", BOPT_INT, &size, NULL, 1, 1 << 30, "block size in bytes"},
      {0}};
  bench_parse(argc, argv, W, "Each of N threads does I malloc(S)/free pairs (reference 001).",
              opts);
  double dt = bench_timed_workers(W, (int)nthreads, worker);
  bench_time_result(W, nthreads, dt, (double)nthreads * (double)iters);
  return 0;
}
