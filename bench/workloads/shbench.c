/* shbench: random sizes and random lifetimes, after the published description of MicroQuill's
 * SmartHeap benchmark.  Each thread keeps a pool of slots; every step allocates a burst of blocks
 * of random size (small sizes much more likely than large) into random slots, freeing whatever
 * lived there, so lifetimes are geometric: most blocks die young, a few live long. */
#include "../common.h"

static const char *W = "shbench";
static long long nthreads = 1, steps = 2000, nslots = 2000, burst = 100, maxsz = 1000;

struct slot { void *p; uint32_t n; uint64_t key; };

static size_t pick_size(struct bench_rng *r) {
  /* Cube of a uniform variable: skewed toward small sizes, with a long tail to max. */
  double u = (double)(bench_rand(r) >> 11) / 9007199254740992.0;
  size_t n = (size_t)(u * u * u * (double)maxsz) + 1;
  return n > (size_t)maxsz ? (size_t)maxsz : n;
}

static void *worker(void *arg) {
  int id = ((struct bench_tid *)arg)->id;
  struct slot *s = calloc((size_t)nslots, sizeof *s);
  if (!s) bench_oom(W, (size_t)nslots * sizeof *s);
  struct bench_rng r;
  bench_rng_seed(&r, (uint64_t)id * 31 + 7);
  uint64_t key = bench_mix((uint64_t)id + 17) << 24;
  for (long long st = 0; st < steps; st++) {
    long long b = (long long)bench_range(&r, 1, (size_t)burst);
    for (long long i = 0; i < b; i++) {
      struct slot *x = &s[bench_rand(&r) % (uint64_t)nslots];
      if (x->p) bench_release(x->p, x->n, x->key, W);
      x->n = (uint32_t)pick_size(&r);
      x->key = key++;
      x->p = bench_alloc(x->n, x->key, W);
    }
    /* Now and then free a random run of slots: the "end of a transaction". */
    if (bench_rand(&r) % 8 == 0) {
      size_t from = (size_t)(bench_rand(&r) % (uint64_t)nslots);
      size_t len = (size_t)(bench_rand(&r) % (uint64_t)(nslots / 4 + 1));
      for (size_t i = from; i < from + len && i < (size_t)nslots; i++)
        if (s[i].p) { bench_release(s[i].p, s[i].n, s[i].key, W); s[i].p = NULL; }
    }
  }
  for (long long i = 0; i < nslots; i++)
    if (s[i].p) bench_release(s[i].p, s[i].n, s[i].key, W);
  free(s);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads"},
      {'n', "steps", BOPT_INT, &steps, NULL, 1, 1000000000, "steps per thread"},
      {0, "slots", BOPT_INT, &nslots, NULL, 1, 100000000, "slots per thread"},
      {'b', "burst", BOPT_INT, &burst, NULL, 1, 1000000, "largest burst of allocations per step"},
      {'m', "max-size", BOPT_INT, &maxsz, NULL, 1, 1 << 30, "largest block"},
      {0}};
  bench_parse(argc, argv, W, "Random sizes (skewed small) with random lifetimes, per thread.", opts);
  double dt = bench_timed_workers(W, (int)nthreads, worker);
  bench_time_result(W, nthreads, dt, (double)nthreads * (double)steps * (double)(burst + 1) / 2.0);
  return 0;
}
