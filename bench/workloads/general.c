/* general: the libmtmalloc "general" heap-contention test (reference 003), timed.  NCPUS
 * threads each keep N blocks of rand()%64 bytes live, then free them all.  Sizes come from a
 * per-thread generator instead of rand(): rand() takes a libc lock, which would add contention
 * that is not the allocator's. */
#include "../common.h"

static const char *W = "general";
static long long nthreads = 0, nblocks = 1000000, rounds = 1, maxsize = 64;


static void *worker(void *a) {
  int id = ((struct bench_tid *)a)->id;
  void **p = malloc((size_t)nblocks * sizeof *p);
  unsigned char *sz = malloc((size_t)nblocks);
  if (!p || !sz) bench_oom(W, (size_t)nblocks * 9);
  struct bench_rng r;
  for (long long k = 0; k < rounds; k++) {
    bench_rng_seed(&r, (uint64_t)id * 7919 + (uint64_t)k);
    uint64_t base = bench_mix(((uint64_t)id << 32) ^ (uint64_t)k);
    for (long long i = 0; i < nblocks; i++) {
      sz[i] = (unsigned char)(bench_rand(&r) % (uint64_t)maxsize);
      p[i] = bench_malloc(sz[i]);
      if (!p[i]) bench_oom(W, sz[i]);
      bench_fill(p[i], sz[i], base + (uint64_t)i);
    }
    for (long long i = 0; i < nblocks; i++) bench_release(p[i], sz[i], base + (uint64_t)i, W);
  }
  free(p);
  free(sz);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 0, 1024, "threads (0 = number of CPUs)"},
      {'n', "blocks", BOPT_INT, &nblocks, NULL, 1, 100000000, "blocks each thread keeps live"},
      {'r', "rounds", BOPT_INT, &rounds, NULL, 1, 1000000, "allocate-all/free-all rounds"},
      {'m', "max-size", BOPT_INT, &maxsize, NULL, 1, 256, "sizes are random in [0, M)"},
      {0}};
  bench_parse(argc, argv, W,
              "libmtmalloc's general test: NCPUS threads each malloc N blocks of random size "
              "0..63, then free them all.",
              opts);
  if (nthreads == 0) nthreads = bench_ncpus();
  double dt = bench_timed_workers(W, (int)nthreads, worker);
  bench_time_result(W, nthreads, dt, (double)nthreads * (double)nblocks * (double)rounds);
  return 0;
}
