/* glibc-thread: the shape of glibc's own malloc benchmark (benchtests/bench-malloc-thread), the
 * "glibc-thread" of the public allocator suites.  Every thread owns 1024 slots and, per op, frees
 * the block in a slot and puts a new one there, the slot and the size taken in turn from two
 * tables drawn once (4096 slots, 8000 sizes): sizes follow an inverse-square distribution over
 * [4, 32768], so nine blocks in ten are under 40 bytes, one in 250 is over 1 KiB, and a thread
 * holds only some 40 KiB live -- spread over every size class an allocator has.  The peak RSS
 * is then mostly what each thread costs: its heap and one resident page per class it touched
 * (glibc packs every size into one arena).  glibc's benchmark runs for a fixed time and counts
 * ops; this one does a fixed number, so the wall time is the metric like everywhere else here.
 * Every block is filled and checked before it is freed (common.h). */
#include "../common.h"

static const char *W = "glibc-thread";
static long long nthreads = 1, ops = 1000000, slots = 1024, minsz = 4, maxsz = 32768;

enum { SIZES = 8000, PICKS = 4096 };

struct rec { void *p; uint32_t n; uint64_t key; };

/* Inverse-square density on [lo, hi]: F(x) = (1/lo - 1/x) / (1/lo - 1/hi), inverted at u. */
static uint32_t inverse_square(struct bench_rng *r, double lo, double hi) {
  double u = (double)(bench_rand(r) >> 11) / 9007199254740992.0;   /* [0, 1) */
  double x = 1.0 / (1.0 / lo - u * (1.0 / lo - 1.0 / hi));
  if (x < lo) x = lo;
  if (x > hi) x = hi;
  return (uint32_t)x;
}

static void *worker(void *a) {
  int id = ((struct bench_tid *)a)->id;
  struct bench_rng r;
  bench_rng_seed(&r, (uint64_t)id * 104729 + 88);
  uint64_t key = bench_mix((uint64_t)id + 1) << 32;
  uint32_t *size = malloc(SIZES * sizeof *size);
  uint32_t *pick = malloc(PICKS * sizeof *pick);
  struct rec *s = calloc((size_t)slots, sizeof *s);
  if (!size || !pick || !s)
    bench_oom(W, SIZES * sizeof *size + PICKS * sizeof *pick + (size_t)slots * sizeof *s);
  for (int i = 0; i < SIZES; i++) size[i] = inverse_square(&r, (double)minsz, (double)maxsz);
  for (int i = 0; i < PICKS; i++) pick[i] = (uint32_t)(bench_rand(&r) % (uint64_t)slots);
  /* the slots start empty, as glibc's do: the first op on a slot frees NULL */
  for (long long i = 0; i < ops; i++) {
    struct rec *x = &s[pick[i % PICKS]];
    if (x->p) bench_release(x->p, x->n, x->key, W);
    else free(NULL);
    x->n = size[i % SIZES];
    x->key = key++;
    x->p = bench_alloc(x->n, x->key, W);
  }
  for (long long i = 0; i < slots; i++)
    if (s[i].p) bench_release(s[i].p, s[i].n, s[i].key, W);
  free(s);
  free(pick);
  free(size);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads"},
      {'n', "ops", BOPT_INT, &ops, NULL, 1, 1000000000000LL, "replacements per thread"},
      {'w', "slots", BOPT_INT, &slots, NULL, 1, 100000000, "slots per thread"},
      {'l', "min-size", BOPT_INT, &minsz, NULL, 1, 1 << 20, "smallest block"},
      {'m', "max-size", BOPT_INT, &maxsz, NULL, 1, 1 << 30, "largest block"},
      {0}};
  bench_parse(argc, argv, W,
              "glibc's bench-malloc-thread shape: N threads, each replacing blocks in S slots, "
              "sizes inverse-square over [L, M].", opts);
  if (minsz > maxsz) {
    fprintf(stderr, "%s: error: --min-size %lld is above --max-size %lld\n", W, minsz, maxsz);
    return BENCH_EXIT_USAGE;
  }
  double dt = bench_timed_workers(W, (int)nthreads, worker);
  bench_time_result(W, nthreads, dt, (double)nthreads * (double)ops);
  return 0;
}
