/* mstress: mixed lifetimes and thread churn, after the published description of mimalloc-bench's
 * mstress.  Every round starts fresh threads; each keeps short-lived blocks in a local array and
 * swaps blocks with a shared array that outlives the round, so blocks are freed by threads that
 * did not allocate them, often after their allocating thread has exited.  Sizes are mostly small
 * with an occasional large block. */
#include "../common.h"

static const char *W = "mstress";
static long long nthreads = 1, rounds = 10, ops = 20000, nlocal = 500, nshared = 2000;

struct rec { void *p; uint32_t n; uint64_t key; };
struct gslot { pthread_mutex_t mu; struct rec r; };

static struct gslot *shared;
struct targ { int id; long long round; };

static size_t pick_size(struct bench_rng *r) {
  uint64_t x = bench_rand(r);
  if (x % 1000 == 0) return bench_range(r, 32 << 10, 512 << 10);  /* rare large */
  if (x % 10 == 0) return bench_range(r, 256, 4096);
  return bench_range(r, 8, 128);
}

static void *worker(void *arg) {
  struct targ *a = arg;
  struct bench_rng r;
  bench_rng_seed(&r, ((uint64_t)a->id << 32) ^ (uint64_t)a->round ^ 0x55);
  uint64_t key = bench_mix(((uint64_t)a->id << 48) ^ ((uint64_t)a->round << 20));
  struct rec *loc = calloc((size_t)nlocal, sizeof *loc);
  if (!loc) bench_oom(W, (size_t)nlocal * sizeof *loc);
  for (long long i = 0; i < ops; i++) {
    struct rec *l = &loc[bench_rand(&r) % (uint64_t)nlocal];
    if (bench_rand(&r) % 4 == 0) {
      /* Swap with the shared array: the block we leave there outlives this thread. */
      struct gslot *g = &shared[bench_rand(&r) % (uint64_t)nshared];
      pthread_mutex_lock(&g->mu);
      struct rec t = g->r;
      g->r = *l;
      pthread_mutex_unlock(&g->mu);
      *l = t;
    } else {
      if (l->p) bench_release(l->p, l->n, l->key, W);
      l->n = (uint32_t)pick_size(&r);
      l->key = key++;
      l->p = bench_alloc(l->n, l->key, W);
    }
  }
  for (long long i = 0; i < nlocal; i++)
    if (loc[i].p) bench_release(loc[i].p, loc[i].n, loc[i].key, W);
  free(loc);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads per round"},
      {'r', "rounds", BOPT_INT, &rounds, NULL, 1, 1000000, "rounds (each starts new threads)"},
      {'o', "ops", BOPT_INT, &ops, NULL, 1, 1000000000, "operations per thread per round"},
      {0, "local", BOPT_INT, &nlocal, NULL, 1, 10000000, "short-lived slots per thread"},
      {0, "shared", BOPT_INT, &nshared, NULL, 1, 10000000, "long-lived shared slots"},
      {0}};
  bench_parse(argc, argv, W, "Mixed lifetimes and thread churn with a shared long-lived pool.", opts);
  shared = calloc((size_t)nshared, sizeof *shared);
  if (!shared) bench_oom(W, (size_t)nshared * sizeof *shared);
  for (long long i = 0; i < nshared; i++) pthread_mutex_init(&shared[i].mu, NULL);
  struct targ *a = calloc((size_t)nthreads, sizeof *a);
  double t0 = bench_now();
  for (long long k = 0; k < rounds; k++) {
    for (int i = 0; i < nthreads; i++) { a[i].id = i; a[i].round = k; }
    bench_run_threads(W, (int)nthreads, worker, a, sizeof *a);
  }
  for (long long i = 0; i < nshared; i++)
    if (shared[i].r.p) bench_release(shared[i].r.p, shared[i].r.n, shared[i].r.key, W);
  double dt = bench_now() - t0;
  char extra[64];
  snprintf(extra, sizeof extra, "ops_per_s=%.6g", (double)nthreads * (double)ops * (double)rounds / dt);
  bench_result(W, nthreads, "time", dt, "s", "lower", extra);
  free(a);
  free(shared);
  return 0;
}
