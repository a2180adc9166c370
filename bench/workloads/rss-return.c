/* rss-return: does freed memory go back to the OS while the program keeps running?  (Issue 2's
 * requirement: after a 1 GiB peak is freed, RSS under 10% of the peak within 3 s.)
 *
 * T threads together allocate about S MiB in blocks of 64 B..1 MiB (log-uniform) with a few of
 * 4..32 MiB, every page touched, then free all of it but one block in K (each checked first) and
 * exit.  The survivors are what real programs keep (a cache entry, a session): scattered among
 * the freed memory, they are what stops an allocator that can only give back the top of its
 * heap.  The main thread
 * then keeps doing a little malloc/free work every millisecond -- a program that is still alive,
 * not one that has gone idle -- and samples its resident set every 20 ms for W ms.
 * Reports the share of the peak still resident at the end, and when it first fell under 10%.
 * With T = 1 the main thread is the one that allocated (the threads run one after the other
 * otherwise the same way). */
#include "../common.h"

static const char *W = "rss-return";
static long long nthreads = 1, total_mb = 1024, watch_ms = 3000, keep_every = 100,
                 max_size = 1 << 20;

static size_t rss_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, res = 0;
  if (!f) return 0;
  if (fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
  fclose(f);
  return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

struct blk { void *p; size_t n; uint64_t key; };
static _Atomic size_t peak_rss;
static struct blk *kept[64];     /* survivors, per thread; freed after the watch */
static size_t nkept[64];

/* Log-uniform in 64 B..max_size; with the default 1 MiB maximum, also one block in 256 of
 * 4..32 MiB.  A small maximum (4 KiB) is a peak of small objects only, the case an allocator
 * that hands big blocks straight to mmap cannot fall back on. */
static size_t pick(struct bench_rng *r) {
  if (max_size >= (1 << 20) && bench_rand(r) % 256 == 0) return bench_range(r, 4 << 20, 32 << 20);
  double u = (double)(bench_rand(r) >> 11) / 9007199254740992.0;
  return (size_t)(64.0 * __builtin_exp(u * __builtin_log((double)max_size / 64.0)));
}

static void note_peak(void) {
  size_t r = rss_bytes(), p = atomic_load(&peak_rss);
  while (r > p && !atomic_compare_exchange_weak(&peak_rss, &p, r)) {
  }
}

static void *worker(void *arg) {
  int id = ((struct bench_tid *)arg)->id;
  size_t share = ((size_t)total_mb << 20) / (size_t)nthreads, got = 0, cap = 1024, n = 0;
  struct blk *b = malloc(cap * sizeof *b);
  if (!b) bench_oom(W, cap * sizeof *b);
  struct bench_rng r;
  bench_rng_seed(&r, (uint64_t)id + 77);
  uint64_t key = bench_mix((uint64_t)id + 5) << 24;
  while (got < share) {
    if (n == cap) {
      struct blk *nb = realloc(b, 2 * cap * sizeof *b);
      if (!nb) bench_oom(W, 2 * cap * sizeof *b);
      b = nb;
      cap *= 2;
    }
    size_t sz = pick(&r);
    b[n].n = sz;
    b[n].key = key++;
    b[n].p = bench_alloc(sz, b[n].key, W);
    got += sz;
    n++;
  }
  note_peak();
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (keep_every && i % (size_t)keep_every == (size_t)keep_every - 1) b[k++] = b[i];
    else bench_release(b[i].p, b[i].n, b[i].key, W);
  }
  kept[id] = b;   /* the survivors, compacted to the front */
  nkept[id] = k;
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 64, "threads that allocate and free the peak"},
      {'s', "size-mb", BOPT_INT, &total_mb, NULL, 1, 1 << 20, "peak in MiB"},
      {'w', "watch-ms", BOPT_INT, &watch_ms, NULL, 1, 600000, "how long to watch the RSS afterwards"},
      {'k', "keep-every", BOPT_INT, &keep_every, NULL, 0, 1000000, "keep one block in K live (0: none)"},
      {'m', "max-size", BOPT_INT, &max_size, NULL, 64, 1 << 30, "largest block (log-uniform from 64 B)"},
      {0}};
  bench_parse(argc, argv, W,
              "Allocate and free a large peak, keep working a little, watch RSS fall (or not).",
              opts);
  /* one thread: the main thread itself allocates; several: workers that then exit */
  if (nthreads == 1) {
    struct bench_tid me = {0};
    worker(&me);
  } else {
    bench_timed_workers(W, (int)nthreads, worker);
  }
  size_t peak = atomic_load(&peak_rss);
  double t0 = bench_now(), t10 = -1, next = 0;
  size_t now_rss = rss_bytes();
  void *small[32] = {0};
  for (long long tick = 0;; tick++) {
    double t = bench_now() - t0;
    if (t >= next) {
      now_rss = rss_bytes();
      if (t10 < 0 && now_rss * 10 < peak) t10 = t;
      next += 0.02;
    }
    if (t * 1000.0 >= (double)watch_ms) break;
    /* a little work: a handful of small blocks replaced, checked as everywhere else */
    for (int i = 0; i < 32; i++) {
      uint64_t key = (uint64_t)tick * 32 + (uint64_t)i;
      if (small[i]) bench_release(small[i], 48, key - 32, W);
      small[i] = bench_alloc(48, key, W);
    }
    bench_sleep_ms(1);
  }
  for (int i = 0; i < 32; i++) free(small[i]);
  size_t kept_bytes = 0;
  for (int t = 0; t < nthreads; t++) {
    for (size_t i = 0; i < nkept[t]; i++) {
      kept_bytes += kept[t][i].n;
      bench_release(kept[t][i].p, kept[t][i].n, kept[t][i].key, W);
    }
    free(kept[t]);
  }
  char extra[200];
  snprintf(extra, sizeof extra, "peak_mb=%.1f end_mb=%.1f kept_mb=%.1f under10pct_s=%.3f",
           (double)peak / 1048576.0, (double)now_rss / 1048576.0, (double)kept_bytes / 1048576.0,
           t10);
  bench_result(W, nthreads, "rss_left_pct", peak ? 100.0 * (double)now_rss / (double)peak : 0.0,
               "%", "lower", extra);
  return 0;
}
