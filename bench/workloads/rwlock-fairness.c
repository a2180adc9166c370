/* rwlock-fairness: writer starvation in glibc's rwlocks (reference 001).  Readers overlap
 * continuously (each holds the read lock for a while and takes it again at once) while one
 * writer tries every 20 ms with a timeout.  Reports the writer's waits for each kind.  Not an
 * allocator test; the data it protects is malloc'd and checked so a bad allocator still shows.
 *
 * The protected data is a buffer filled with a pattern keyed by its version.  Readers check it
 * under the read lock (a writer running concurrently with a reader would show as a mismatch) and
 * copy it into a malloc'd snapshot that they verify and free on their next pass. */
#include "../common.h"

static const char *W = "rwlock-fairness";
static long long nreaders = 4, duration_ms = 2000, period_ms = 20, timeout_ms = 500,
                 hold_us = 200, bufsize = 256;
static const char *kind_name = "all";

static pthread_rwlock_t lock;
static unsigned char *shared;
static uint64_t version;
static _Atomic bool stop;

static void spin_us(long long us) {
  double end = bench_now() + (double)us * 1e-6;
  while (bench_now() < end) {
  }
}

static void *reader(void *a) {
  (void)a;
  void *snap = NULL;
  uint64_t snapkey = 0;
  size_t n = (size_t)bufsize;
  while (!atomic_load(&stop)) {
    pthread_rwlock_rdlock(&lock);
    uint64_t v = version;
    bench_verify(shared, n, v, W);
    void *p = bench_malloc(n);
    if (!p) bench_oom(W, n);
    memcpy(p, shared, n);
    spin_us(hold_us);
    pthread_rwlock_unlock(&lock);
    if (snap) bench_release(snap, n, snapkey, W);
    snap = p;
    snapkey = v;
  }
  if (snap) bench_release(snap, n, snapkey, W);
  return NULL;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void run_kind(int kind, const char *name) {
  pthread_rwlockattr_t at;
  pthread_rwlockattr_init(&at);
  pthread_rwlockattr_setkind_np(&at, kind);
  pthread_rwlock_init(&lock, &at);
  pthread_rwlockattr_destroy(&at);
  size_t n = (size_t)bufsize;
  version = 1;
  shared = bench_alloc(n, version, W);
  atomic_store(&stop, false);
  pthread_t *th = calloc((size_t)nreaders, sizeof *th);
  for (long long i = 0; i < nreaders; i++) {
    int e = pthread_create(&th[i], NULL, reader, NULL);
    if (e) bench_die(W, "pthread_create", e);
  }
  size_t cap = (size_t)(duration_ms / (period_ms ? period_ms : 1)) + 16;
  double *waits = malloc(cap * sizeof *waits);
  if (!waits) bench_oom(W, cap * sizeof *waits);
  size_t nw = 0;
  long long timeouts = 0;
  double t0 = bench_now();
  bench_sleep_ms(period_ms);
  while ((bench_now() - t0) * 1000.0 < (double)duration_ms && nw < cap) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += timeout_ms / 1000;
    dl.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) { dl.tv_sec++; dl.tv_nsec -= 1000000000L; }
    double a = bench_now();
    int e = pthread_rwlock_timedwrlock(&lock, &dl);
    double w = (bench_now() - a) * 1000.0;
    waits[nw++] = w;
    if (e == ETIMEDOUT) {
      timeouts++;
    } else if (e) {
      bench_die(W, "pthread_rwlock_timedwrlock", e);
    } else {
      unsigned char *old = shared;
      uint64_t oldv = version;
      shared = bench_alloc(n, version + 1, W);
      version++;
      pthread_rwlock_unlock(&lock);
      bench_release(old, n, oldv, W);
    }
    bench_sleep_ms(period_ms);
  }
  atomic_store(&stop, true);
  for (long long i = 0; i < nreaders; i++) pthread_join(th[i], NULL);
  bench_release(shared, n, version, W);
  pthread_rwlock_destroy(&lock);
  qsort(waits, nw, sizeof *waits, cmp_d);
  double p50 = waits[(size_t)(0.5 * (double)(nw - 1) + 0.5)];
  double p99 = waits[(size_t)(0.99 * (double)(nw - 1) + 0.5)];
  char extra[256];
  snprintf(extra, sizeof extra,
           "kind=%s p50_ms=%.3f max_ms=%.3f attempts=%zu timeouts=%lld timeout_ms=%lld", name,
           p50, waits[nw - 1], nw, timeouts, timeout_ms);
  bench_result(W, nreaders, "writer_p99", p99, "ms", "lower", extra);
  free(waits);
  free(th);
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nreaders, NULL, 1, 256, "reader threads"},
      {'d', "duration-ms", BOPT_INT, &duration_ms, NULL, 1, 3600000, "run time per kind"},
      {'p', "period-ms", BOPT_INT, &period_ms, NULL, 1, 60000, "writer tries every P ms"},
      {0, "timeout-ms", BOPT_INT, &timeout_ms, NULL, 1, 600000,
       "writer gives up after this long (counted as a timeout)"},
      {0, "hold-us", BOPT_INT, &hold_us, NULL, 0, 1000000, "readers hold the lock this long"},
      {'k', "kind", BOPT_STR, NULL, &kind_name, 0, 0,
       "default, prefer-writer, nonrecursive or all"},
      {0}};
  bench_parse(argc, argv, W,
              "Readers overlap continuously while a writer tries every 20 ms; writer waits for "
              "glibc's rwlock kinds.",
              opts);
  struct { const char *name; int kind; } kinds[] = {
      {"default", PTHREAD_RWLOCK_DEFAULT_NP},
      {"prefer-writer", PTHREAD_RWLOCK_PREFER_WRITER_NP},
      {"nonrecursive", PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP}};
  bool all = !strcmp(kind_name, "all"), found = all;
  for (int i = 0; i < 3; i++)
    if (all || !strcmp(kind_name, kinds[i].name)) {
      found = true;
      run_kind(kinds[i].kind, kinds[i].name);
    }
  if (!found) bench_usage_error("unknown --kind '%s'", kind_name);
  return 0;
}
