/* lock-pairs: the cost of an uncontended pthread_mutex_lock + unlock pair, the figure plockstat
 * promises to add at most 20 ns to (issue 4).  mtheap-bench's `plockstat-cost` runs it bare and
 * under `plockstat -C` and `-H`, interleaved, and reports the difference.
 *
 * An idle second thread is started first: while a process has one thread, glibc's mutex skips its
 * atomic instruction, and programs worth profiling have several.  The locks protect a counter
 * array that is checked at the end, so a broken lock wrapper that lets a pair through without
 * the lock (or loses an update) shows as a self-check failure. */
#include "../common.h"

static const char *W = "lock-pairs";
static long long pairs = 10000000, runs = 5, single = 0;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long long counter;

static void *idle(void *a) {
  (void)a;
  for (;;) pause();
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'n', "pairs", BOPT_INT, &pairs, NULL, 1, 10000000000LL, "lock/unlock pairs per run"},
      {'r', "runs", BOPT_INT, &runs, NULL, 1, 1000, "runs; the best one is reported"},
      {0, "single-thread", BOPT_FLAG, &single, NULL, 0, 1, "do not start the idle second thread"},
      {0}};
  bench_parse(argc, argv, W,
              "ns per uncontended pthread_mutex_lock+unlock pair (best of R runs of N pairs).",
              opts);
  if (!single) {
    pthread_t t;
    int e = pthread_create(&t, NULL, idle, NULL);
    if (e) bench_die(W, "pthread_create", e);
    pthread_detach(t);
  }
  double best = 1e30;
  for (long long r = 0; r < runs; r++) {
    double t0 = bench_now();
    for (long long i = 0; i < pairs; i++) {
      pthread_mutex_lock(&lock);
      counter++;
      pthread_mutex_unlock(&lock);
    }
    double dt = bench_now() - t0;
    if (dt < best) best = dt;
  }
  if (counter != pairs * runs) {
    printf("FAIL workload=%s reason=selfcheck counter %lld after %lld pairs\n", W, counter,
           pairs * runs);
    return BENCH_EXIT_SELFCHECK;
  }
  char extra[64];
  snprintf(extra, sizeof extra, "pairs=%lld", pairs);
  bench_result(W, single ? 1 : 2, "ns_per_pair", best / (double)pairs * 1e9, "ns", "lower", extra);
  return 0;
}
