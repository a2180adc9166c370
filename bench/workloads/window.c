/* window: every thread keeps a window of W live blocks of random sizes and replaces one per
 * operation (free a random slot's block, allocate a new one of random size into it): the steady
 * state of a cache, a connection table or an interpreter's heap.  Many classes are live at once
 * and frees land on pages in random order, so pages go from full to partly free all the time;
 * the peak RSS shows how much an allocator's per-class pages and lists cost over the W blocks
 * really in use.  Sizes are uniform in [8, M]; every block is checked before it is freed. */
#include "../common.h"

static const char *W = "window";
static long long nthreads = 1, ops = 1000000, slots = 2000, maxsz = 4096;

struct rec { void *p; uint32_t n; uint64_t key; };

static void *worker(void *a) {
  int id = ((struct bench_tid *)a)->id;
  struct bench_rng r;
  bench_rng_seed(&r, (uint64_t)id * 7919 + 17);
  uint64_t key = bench_mix((uint64_t)id + 1) << 32;
  struct rec *s = calloc((size_t)slots, sizeof *s);
  if (!s) bench_oom(W, (size_t)slots * sizeof *s);
  for (long long i = 0; i < slots; i++) {
    s[i].n = (uint32_t)bench_range(&r, 8, (size_t)maxsz);
    s[i].key = key++;
    s[i].p = bench_alloc(s[i].n, s[i].key, W);
  }
  for (long long i = 0; i < ops; i++) {
    struct rec *x = &s[bench_rand(&r) % (uint64_t)slots];
    bench_release(x->p, x->n, x->key, W);
    x->n = (uint32_t)bench_range(&r, 8, (size_t)maxsz);
    x->key = key++;
    x->p = bench_alloc(x->n, x->key, W);
  }
  for (long long i = 0; i < slots; i++) bench_release(s[i].p, s[i].n, s[i].key, W);
  free(s);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads"},
      {'n', "ops", BOPT_INT, &ops, NULL, 1, 1000000000000LL, "replacements per thread"},
      {'w', "window", BOPT_INT, &slots, NULL, 1, 100000000, "live blocks per thread"},
      {'m', "max-size", BOPT_INT, &maxsz, NULL, 8, 1 << 30, "largest block (sizes uniform in 8..M)"},
      {0}};
  bench_parse(argc, argv, W, "Each of N threads keeps W live blocks of random size, replacing one per op.",
              opts);
  double dt = bench_timed_workers(W, (int)nthreads, worker);
  bench_time_result(W, nthreads, dt, (double)nthreads * (double)ops);
  return 0;
}
