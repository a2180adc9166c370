/* large: blocks of 64 KiB to 64 MiB (sizes log-uniform), each touched on every page, a few live
 * per thread.  This is where allocators differ most in system time: mmap/munmap per block,
 * purging and re-faulting pages, or keeping them (and the RSS). */
#include "../common.h"

static const char *W = "large";
static long long nthreads = 1, iters = 200, minsz = 64 << 10, maxsz = 64 << 20, live = 4;

struct rec { void *p; size_t n; uint64_t key; };

static size_t pick(struct bench_rng *r) {
  double u = (double)(bench_rand(r) >> 11) / 9007199254740992.0;
  double lo = (double)minsz, hi = (double)maxsz;
  size_t n = (size_t)(lo * __builtin_exp(u * __builtin_log(hi / lo)));
  return n < (size_t)minsz ? (size_t)minsz : n > (size_t)maxsz ? (size_t)maxsz : n;
}

static void *worker(void *arg) {
  int id = ((struct bench_tid *)arg)->id;
  struct rec *ring = calloc((size_t)live, sizeof *ring);
  struct bench_rng r;
  bench_rng_seed(&r, (uint64_t)id + 4242);
  uint64_t key = bench_mix((uint64_t)id + 29) << 24;
  for (long long i = 0; i < iters; i++) {
    struct rec *x = &ring[i % live];
    if (x->p) bench_release(x->p, x->n, x->key, W);
    x->n = pick(&r);
    x->key = key++;
    x->p = bench_alloc(x->n, x->key, W);
  }
  for (long long i = 0; i < live; i++)
    if (ring[i].p) bench_release(ring[i].p, ring[i].n, ring[i].key, W);
  free(ring);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads"},
      {'i', "iterations", BOPT_INT, &iters, NULL, 1, 1000000000, "blocks each thread allocates"},
      {0, "min-size", BOPT_INT, &minsz, NULL, 1, 1LL << 36, "smallest block"},
      {0, "max-size", BOPT_INT, &maxsz, NULL, 1, 1LL << 36, "largest block"},
      {'l', "live", BOPT_INT, &live, NULL, 1, 100000, "blocks live per thread"},
      {0}};
  bench_parse(argc, argv, W, "Large blocks: 64 KiB to 64 MiB, log-uniform, every page touched.", opts);
  if (minsz > maxsz) bench_usage_error("--min-size must not exceed --max-size");
  double dt = bench_timed_workers(W, (int)nthreads, worker);
  bench_time_result(W, nthreads, dt, (double)nthreads * (double)iters);
  return 0;
}
