/* realloc: growth chains.  Each thread grows many buffers step by step with realloc (by about a
 * third each time, sometimes shrinking), the way strings and vectors grow, and restarts a chain
 * once it reaches the maximum.  The self-check verifies that realloc kept the old contents at
 * every step, then rewrites the pattern for the new size. */
#include "../common.h"

static const char *W = "realloc";
static long long nthreads = 1, nchains = 100, steps = 500, maxsz = 1 << 20;

struct chain { void *p; size_t n; uint64_t key; };

static void *worker(void *arg) {
  int id = ((struct bench_tid *)arg)->id;
  struct chain *c = calloc((size_t)nchains, sizeof *c);
  if (!c) bench_oom(W, (size_t)nchains * sizeof *c);
  struct bench_rng r;
  bench_rng_seed(&r, (uint64_t)id + 1000);
  uint64_t key = bench_mix((uint64_t)id + 23) << 24;
  for (long long i = 0; i < nchains; i++) {
    c[i].n = bench_range(&r, 1, 64);
    c[i].key = key++;
    c[i].p = bench_alloc(c[i].n, c[i].key, W);
  }
  for (long long s = 0; s < steps; s++) {
    for (long long i = 0; i < nchains; i++) {
      struct chain *x = &c[i];
      size_t n;
      if (x->n >= (size_t)maxsz) {
        bench_release(x->p, x->n, x->key, W);
        x->n = bench_range(&r, 1, 64);
        x->key = key++;
        x->p = bench_alloc(x->n, x->key, W);
        continue;
      }
      if (bench_rand(&r) % 10 == 0)
        n = x->n / 2 + 1;
      else
        n = x->n + x->n / 3 + bench_range(&r, 1, 64);
      if (n > (size_t)maxsz) n = (size_t)maxsz;
      bench_mark();
      void *q = realloc(x->p, n);
      if (!q) bench_oom(W, n);
      /* What survives is the old pattern up to the smaller of the two sizes. */
      if (n >= x->n) bench_verify(q, x->n, x->key, W);
      else {
        size_t head = n < BENCH_EDGE ? n : BENCH_EDGE;
        bench_verify_range(q, 0, head, x->key, bench_key_hash(x->key), n, W);
      }
      x->p = q;
      x->n = n;
      x->key = key++;
      bench_fill(q, n, x->key);
    }
  }
  for (long long i = 0; i < nchains; i++) bench_release(c[i].p, c[i].n, c[i].key, W);
  free(c);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads"},
      {'c', "chains", BOPT_INT, &nchains, NULL, 1, 10000000, "buffers each thread grows"},
      {'n', "steps", BOPT_INT, &steps, NULL, 1, 1000000000, "realloc steps per chain"},
      {'m', "max-size", BOPT_INT, &maxsz, NULL, 64, 1LL << 34, "chains restart at this size"},
      {0}};
  bench_parse(argc, argv, W, "Growth chains: buffers grown (and sometimes shrunk) with realloc.", opts);
  double dt = bench_timed_workers(W, (int)nthreads, worker);
  bench_time_result(W, nthreads, dt, (double)nthreads * (double)nchains * (double)steps);
  return 0;
}
