/* malloc_test: the harness of reference 000 (Oracle, "which MT-hot allocator").  -t pairs of
 * threads: the allocating thread of a pair mallocs -n blocks (size -m, or rand_r() % m + 1
 * with -r), hands the batch to its freeing thread, which frees them all: one "loop".  Every
 * sample (-c of them, 3 s each unless -l says otherwise) prints loops per second over all pairs.
 * The freeing thread never allocates, so this is the producer/consumer pattern that blows up
 * thread-caching allocators. */
#include "../common.h"

static const char *W = "malloc_test";
static long long npairs = 1, per_loop = 5000, maxsize = 4096, use_rand = 0, do_memset = 0,
                 samples = 5, stop_loops = 0, sample_ms = 3000;

#define QDEPTH 2

struct batch { void **p; uint32_t *sz; uint64_t key; };

struct pair {
  int id;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct batch q[QDEPTH + 1];  /* ring of filled batches: room for every batch */
  struct batch spare[QDEPTH + 1];
  int head, count, nspare;
  bool producer_done;
  _Atomic long long loops;
  _Atomic bool finished;
};

static _Atomic bool stop;

static void *alloc_thread(void *arg) {
  struct pair *pr = arg;
  unsigned int seed = (unsigned int)pr->id * 2654435761u + 1;
  uint64_t k = bench_mix((uint64_t)pr->id + 77) << 24;
  for (long long made = 0; !atomic_load(&stop) && (stop_loops == 0 || made < stop_loops);
       made++) {
    pthread_mutex_lock(&pr->mu);
    while (pr->nspare == 0 && !atomic_load(&stop)) pthread_cond_wait(&pr->cv, &pr->mu);
    if (pr->nspare == 0) { pthread_mutex_unlock(&pr->mu); break; }
    struct batch b = pr->spare[--pr->nspare];
    pthread_mutex_unlock(&pr->mu);
    b.key = k;
    k += (uint64_t)per_loop;
    for (long long i = 0; i < per_loop; i++) {
      size_t n = use_rand ? (size_t)(rand_r(&seed) % (unsigned)maxsize) + 1 : (size_t)maxsize;
      void *p = bench_malloc(n);
      if (!p) bench_oom(W, n);
      if (do_memset) memset(p, (int)(b.key + (uint64_t)i), n);
      bench_fill(p, n, b.key + (uint64_t)i);
      b.p[i] = p;
      b.sz[i] = (uint32_t)n;
    }
    pthread_mutex_lock(&pr->mu);
    pr->q[(pr->head + pr->count) % (QDEPTH + 1)] = b;
    pr->count++;
    pthread_cond_broadcast(&pr->cv);
    pthread_mutex_unlock(&pr->mu);
  }
  pthread_mutex_lock(&pr->mu);
  pr->producer_done = true;
  pthread_cond_broadcast(&pr->cv);
  pthread_mutex_unlock(&pr->mu);
  return NULL;
}

static void *free_thread(void *arg) {
  struct pair *pr = arg;
  for (;;) {
    pthread_mutex_lock(&pr->mu);
    while (pr->count == 0 && !pr->producer_done) pthread_cond_wait(&pr->cv, &pr->mu);
    if (pr->count == 0) { pthread_mutex_unlock(&pr->mu); break; }
    struct batch b = pr->q[pr->head];
    pr->head = (pr->head + 1) % (QDEPTH + 1);
    pr->count--;
    pthread_mutex_unlock(&pr->mu);
    for (long long i = 0; i < per_loop; i++) bench_release(b.p[i], b.sz[i], b.key + (uint64_t)i, W);
    atomic_fetch_add(&pr->loops, 1);
    pthread_mutex_lock(&pr->mu);
    pr->spare[pr->nspare++] = b;
    pthread_cond_broadcast(&pr->cv);
    pthread_mutex_unlock(&pr->mu);
  }
  atomic_store(&pr->finished, true);
  return NULL;
}

static long long total_loops(struct pair *prs) {
  long long s = 0;
  for (int i = 0; i < npairs; i++) s += atomic_load(&prs[i].loops);
  return s;
}

static bool all_finished(struct pair *prs) {
  for (int i = 0; i < npairs; i++)
    if (!atomic_load(&prs[i].finished)) return false;
  return true;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &npairs, NULL, 1, 512,
       "thread pairs (one allocating and one freeing thread each)"},
      {'n', "per-loop", BOPT_INT, &per_loop, NULL, 1, 5000, "allocations per loop (at most 5000)"},
      {'m', "max-size", BOPT_INT, &maxsize, NULL, 1, 1 << 30, "largest allocation size in bytes"},
      {'r', "random", BOPT_FLAG, &use_rand, NULL, 0, 1,
       "random sizes 1..M from rand_r() instead of always M"},
      {'s', "memset", BOPT_INT, &do_memset, NULL, 0, 1, "1 = memset every block"},
      {'c', "samples", BOPT_INT, &samples, NULL, 0, 1000000,
       "samples to take (0 = until -f loops are done)"},
      {'f', "loops", BOPT_INT, &stop_loops, NULL, 0, 1LL << 40,
       "stop after this many loops per pair (0 = no limit)"},
      {'l', "sample-ms", BOPT_INT, &sample_ms, NULL, 1, 3600000,
       "sample length in milliseconds (the article uses 3000; shorter for tests)"},
      {0}};
  bench_parse(argc, argv, W,
              "Oracle's malloc_test harness: pairs of threads, one allocating batches of -n "
              "blocks and one freeing them; reports loops per second.",
              opts);
  if (samples == 0 && stop_loops == 0)
    bench_usage_error("-c 0 needs -f: the run would never end");
  struct pair *prs = calloc((size_t)npairs, sizeof *prs);
  if (!prs) bench_oom(W, sizeof *prs);
  for (int i = 0; i < npairs; i++) {
    struct pair *pr = &prs[i];
    pr->id = i;
    pthread_mutex_init(&pr->mu, NULL);
    pthread_cond_init(&pr->cv, NULL);
    pr->nspare = QDEPTH + 1;
    for (int j = 0; j < QDEPTH + 1; j++) {
      pr->spare[j].p = malloc((size_t)per_loop * sizeof(void *));
      pr->spare[j].sz = malloc((size_t)per_loop * sizeof(uint32_t));
      if (!pr->spare[j].p || !pr->spare[j].sz) bench_oom(W, (size_t)per_loop * 12);
    }
  }
  pthread_t *th = calloc((size_t)npairs * 2, sizeof *th);
  double t0 = bench_now();
  for (int i = 0; i < npairs; i++) {
    int e = pthread_create(&th[2 * i], NULL, alloc_thread, &prs[i]);
    if (!e) e = pthread_create(&th[2 * i + 1], NULL, free_thread, &prs[i]);
    if (e) bench_die(W, "pthread_create", e);
  }
  long long last = 0;
  double tlast = t0;
  int taken = 0;
  while (samples == 0 || taken < samples) {
    /* Poll in small steps so a run limited by -f ends as soon as its loops are done. */
    double end = tlast + (double)sample_ms / 1000.0;
    bool done = false;
    while (bench_now() < end && !(done = all_finished(prs))) bench_sleep_ms(5);
    double tn = bench_now();
    long long l = total_loops(prs);
    taken++;
    printf("sample %d: %.1f loops/s (%lld loops in %.3f s)\n", taken,
           (double)(l - last) / (tn - tlast), l - last, tn - tlast);
    fflush(stdout);
    last = l;
    tlast = tn;
    if (done) break;
  }
  atomic_store(&stop, true);
  for (int i = 0; i < npairs; i++) {
    pthread_mutex_lock(&prs[i].mu);
    pthread_cond_broadcast(&prs[i].cv);
    pthread_mutex_unlock(&prs[i].mu);
  }
  for (int i = 0; i < 2 * npairs; i++) pthread_join(th[i], NULL);
  double dt = bench_now() - t0;
  long long l = total_loops(prs);
  char extra[192];
  snprintf(extra, sizeof extra, "loops=%lld seconds=%.4f samples=%d", l, dt, taken);
  bench_result(W, npairs, "loops_per_s", (double)l / dt, "loops/s", "higher", extra);
  for (int i = 0; i < npairs; i++)
    for (int j = 0; j < QDEPTH + 1; j++) {
      free(prs[i].spare[j].p);
      free(prs[i].spare[j].sz);
    }
  free(prs);
  free(th);
  return 0;
}
