/* larson: the Larson & Krishnan server simulation, from its published description.  Each
 * thread owns an array of live blocks and repeatedly replaces a random one (free it, allocate
 * a new one of random size).  After its share of replacements the thread exits and a fresh
 * thread inherits the array, as a server hands connections to new workers: most frees are of
 * blocks another (now dead) thread allocated.  The arrays are filled by the main thread first. */
#include "../common.h"

static const char *W = "larson";
static long long nthreads = 1, nslots = 1000, ops = 20000, gens = 10, minsz = 8, maxsz = 1000;

struct slot { void *p; uint32_t n; uint64_t key; };
struct targ { int id; long long gen; struct slot *s; };

static void *worker(void *arg) {
  struct targ *a = arg;
  struct bench_rng r;
  bench_rng_seed(&r, ((uint64_t)a->id << 32) ^ (uint64_t)a->gen);
  uint64_t key = bench_mix(((uint64_t)a->id << 48) ^ ((uint64_t)a->gen << 24));
  for (long long i = 0; i < ops; i++) {
    struct slot *s = &a->s[bench_rand(&r) % (uint64_t)nslots];
    bench_release(s->p, s->n, s->key, W);
    s->n = (uint32_t)bench_range(&r, (size_t)minsz, (size_t)maxsz);
    s->key = key++;
    s->p = bench_alloc(s->n, s->key, W);
  }
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads alive at a time"},
      {'n', "slots", BOPT_INT, &nslots, NULL, 1, 10000000, "live blocks per thread"},
      {'o', "ops", BOPT_INT, &ops, NULL, 1, 1000000000, "replacements per thread per generation"},
      {'g', "generations", BOPT_INT, &gens, NULL, 1, 1000000, "thread generations"},
      {0, "min-size", BOPT_INT, &minsz, NULL, 1, 1 << 30, "smallest block"},
      {0, "max-size", BOPT_INT, &maxsz, NULL, 1, 1 << 30, "largest block"},
      {0}};
  bench_parse(argc, argv, W, "Larson server simulation: random replacement of live blocks, thread churn, cross-thread frees.", opts);
  if (minsz > maxsz) bench_usage_error("--min-size must not exceed --max-size");
  struct targ *a = calloc((size_t)nthreads, sizeof *a);
  struct bench_rng r;
  bench_rng_seed(&r, 42);
  for (int i = 0; i < nthreads; i++) {
    a[i].id = i;
    a[i].s = malloc((size_t)nslots * sizeof *a[i].s);
    if (!a[i].s) bench_oom(W, (size_t)nslots * sizeof *a[i].s);
    for (long long j = 0; j < nslots; j++) {
      struct slot *s = &a[i].s[j];
      s->n = (uint32_t)bench_range(&r, (size_t)minsz, (size_t)maxsz);
      s->key = bench_mix((uint64_t)i * 1000003 + (uint64_t)j);
      s->p = bench_alloc(s->n, s->key, W);
    }
  }
  double t0 = bench_now();
  for (long long g = 0; g < gens; g++) {
    for (int i = 0; i < nthreads; i++) a[i].gen = g;
    bench_run_threads(W, (int)nthreads, worker, a, sizeof *a);
  }
  double dt = bench_now() - t0;
  for (int i = 0; i < nthreads; i++) {
    for (long long j = 0; j < nslots; j++) bench_release(a[i].s[j].p, a[i].s[j].n, a[i].s[j].key, W);
    free(a[i].s);
  }
  char extra[128];
  snprintf(extra, sizeof extra, "ops_per_s=%.6g", (double)nthreads * (double)ops * (double)gens / dt);
  bench_result(W, nthreads, "time", dt, "s", "lower", extra);
  free(a);
  return 0;
}
