/* window: every thread keeps a window of W live blocks of random sizes and replaces one per
 * operation (free a random slot's block, allocate a new one of random size into it): the steady
 * state of a cache, a connection table or an interpreter's heap.  Many classes are live at once
 * and frees land on pages in random order, so pages go from full to partly free all the time;
 * the peak RSS shows how much an allocator's per-class pages and lists cost over the W blocks
 * really in use.  Sizes are uniform in [8, M]; every block is checked before it is freed.
 * With --head, only each block's first 64 bytes are written and checked: a buffer sized for
 * the worst case and mostly unused, where the allocator's own cache misses (its metadata and
 * the block it pops) are the run's, not the program's filling. */
#include "../common.h"

static const char *W = "window";
static long long nthreads = 1, ops = 1000000, slots = 2000, maxsz = 4096;
static long long head;   /* write and check only the first BENCH_EDGE bytes of each block */

struct rec { void *p; uint32_t n; uint64_t key; };

/* The bytes of an n-byte block the run writes and checks. */
static size_t touched(size_t n) { return head && n > BENCH_EDGE ? BENCH_EDGE : n; }

/* A new n-byte block, its checked bytes filled. */
static void *new_block(size_t n, uint64_t key) {
  void *p = bench_malloc(n);
  if (!p) bench_oom(W, n);
  bench_fill(p, touched(n), key);
  return p;
}

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
    s[i].p = new_block(s[i].n, s[i].key);
  }
  for (long long i = 0; i < ops; i++) {
    struct rec *x = &s[bench_rand(&r) % (uint64_t)slots];
    bench_release(x->p, touched(x->n), x->key, W);
    x->n = (uint32_t)bench_range(&r, 8, (size_t)maxsz);
    x->key = key++;
    x->p = new_block(x->n, x->key);
  }
  for (long long i = 0; i < slots; i++) bench_release(s[i].p, touched(s[i].n), s[i].key, W);
  free(s);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads"},
      {'n', "ops", BOPT_INT, &ops, NULL, 1, 1000000000000LL, "replacements per thread"},
      {'w', "window", BOPT_INT, &slots, NULL, 1, 100000000, "live blocks per thread"},
      {'m', "max-size", BOPT_INT, &maxsz, NULL, 8, 1 << 30, "largest block (sizes uniform in 8..M)"},
      {'e', "head", BOPT_FLAG, &head, NULL, 0, 1, "write and check only each block's first 64 bytes"},
      {0}};
  bench_parse(argc, argv, W, "Each of N threads keeps W live blocks of random size, replacing one per op.",
              opts);
  double dt = bench_timed_workers(W, (int)nthreads, worker);
  bench_time_result(W, nthreads, dt, (double)nthreads * (double)ops);
  return 0;
}
