/* cache-scratch: passive false sharing (Hoard's cache-scratch, from its description).  The main
 * thread allocates one small object per thread, back to back, and hands them out; each thread
 * frees its object and then allocates, writes and frees its own objects.  An allocator that
 * gives the freed (neighbouring) object back to the thread that freed it makes the threads share
 * cache lines although the program never shares anything. */
#include "../common.h"

static const char *W = "cache-scratch";
static long long nthreads = 1, iters = 1000, reps = 2000, size = 8;

struct targ { int id; void *given; uint64_t gkey; };

static void *worker(void *arg) {
  struct targ *a = arg;
  bench_release(a->given, (size_t)size, a->gkey, W);
  bench_write_objects(W, (size_t)size, iters, reps, bench_mix((uint64_t)a->id + 11) << 24);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads"},
      {'i', "iterations", BOPT_INT, &iters, NULL, 1, 1000000000, "objects each thread allocates"},
      {'r', "repetitions", BOPT_INT, &reps, NULL, 1, 1000000000, "writes to each object"},
      {'s', "size", BOPT_INT, &size, NULL, 1, 1 << 20, "object size"},
      {0}};
  bench_parse(argc, argv, W, "Passive false sharing: threads free objects the main thread allocated, then allocate and write their own.", opts);
  struct targ *a = calloc((size_t)nthreads, sizeof *a);
  for (int i = 0; i < nthreads; i++) {
    a[i].id = i;
    a[i].gkey = bench_mix((uint64_t)i + 0xabc);
    a[i].given = bench_alloc((size_t)size, a[i].gkey, W);
  }
  double t0 = bench_now();
  bench_run_threads(W, (int)nthreads, worker, a, sizeof *a);
  bench_time_result(W, nthreads, bench_now() - t0, (double)nthreads * (double)iters);
  free(a);
  return 0;
}
