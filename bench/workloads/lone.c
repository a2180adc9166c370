/* lone: every thread does malloc(n); free() with no other block of its own live, the pattern of
 * reference 001's test as written and of any code that allocates a scratch buffer per call.
 * An allocator that gives a page back when its last block is freed, or that keeps its
 * bookkeeping per page, pays for it on every iteration here, not once in a while.  The head and
 * tail of each block are written and checked (bench_fill/bench_verify), with a free(NULL) in
 * between, so a block handed out or written while still in use shows; the allocator's cost
 * dominates. */
#include "../common.h"

static const char *W = "lone";
static long long nthreads = 1, iters = 1000000, size = 1024;

static void *worker(void *a) {
  int id = ((struct bench_tid *)a)->id;
  uint64_t base = bench_mix((uint64_t)id + 1) << 20;
  size_t n = (size_t)size;
  for (long long i = 0; i < iters; i++) {
    void *p = bench_alloc(n, base + (uint64_t)i, W);
    /* an allocator call while the block is live (free(NULL) costs every allocator a test), so
     * an allocator that writes into live blocks on its paths is caught by the check */
    free(NULL);
    bench_release(p, n, base + (uint64_t)i, W);
  }
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads"},
      {'i', "iterations", BOPT_INT, &iters, NULL, 1, 1000000000000LL, "malloc/free pairs per thread"},
      {'s', "size", BOPT_INT, &size, NULL, 1, 1 << 30, "block size in bytes"},
      {0}};
  bench_parse(argc, argv, W, "Each of N threads does I malloc(S); free() pairs, nothing else live.",
              opts);
  double dt = bench_timed_workers(W, (int)nthreads, worker);
  bench_time_result(W, nthreads, dt, (double)nthreads * (double)iters);
  return 0;
}
