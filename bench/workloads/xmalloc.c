/* xmalloc: producer/consumer, from the published description of xmalloc-test.  T producer
 * threads allocate batches of blocks and put them on a shared queue; T other threads take the
 * batches and free them.  The freeing threads never allocate, so memory flows one way: an
 * allocator that caches freed blocks in the freeing thread grows without bound or pays a lot to
 * hand them back. */
#include "../common.h"

static const char *W = "xmalloc";
static long long nthreads = 1, nblocks = 200000, maxsz = 256, batch = 64;

struct rec { void *p; uint32_t n; uint64_t key; };
struct qbatch { struct rec *r; struct qbatch *next; };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv_items = PTHREAD_COND_INITIALIZER, cv_space = PTHREAD_COND_INITIALIZER;
static struct qbatch *qhead, *qtail;
static long long qlen, producers_left;
#define QMAX 64

struct targ { int id; };

static void *producer(void *arg) {
  int id = ((struct targ *)arg)->id;
  struct bench_rng r;
  bench_rng_seed(&r, (uint64_t)id + 99);
  uint64_t key = bench_mix((uint64_t)id + 5) << 20;
  for (long long done = 0; done < nblocks; done += batch) {
    struct qbatch *b = malloc(sizeof *b);
    if (!b) bench_oom(W, sizeof *b);
    b->r = malloc((size_t)batch * sizeof *b->r);
    if (!b->r) bench_oom(W, (size_t)batch * sizeof *b->r);
    for (long long i = 0; i < batch; i++) {
      b->r[i].n = (uint32_t)bench_range(&r, 8, (size_t)maxsz);
      b->r[i].key = key++;
      b->r[i].p = bench_alloc(b->r[i].n, b->r[i].key, W);
    }
    b->next = NULL;
    pthread_mutex_lock(&mu);
    while (qlen >= QMAX) pthread_cond_wait(&cv_space, &mu);
    if (qtail) qtail->next = b; else qhead = b;
    qtail = b;
    qlen++;
    pthread_cond_signal(&cv_items);
    pthread_mutex_unlock(&mu);
  }
  pthread_mutex_lock(&mu);
  producers_left--;
  pthread_cond_broadcast(&cv_items);
  pthread_mutex_unlock(&mu);
  return NULL;
}

static void *consumer(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&mu);
    while (!qhead && producers_left > 0) pthread_cond_wait(&cv_items, &mu);
    struct qbatch *b = qhead;
    if (!b) { pthread_mutex_unlock(&mu); return NULL; }
    qhead = b->next;
    if (!qhead) qtail = NULL;
    qlen--;
    pthread_cond_signal(&cv_space);
    pthread_mutex_unlock(&mu);
    for (long long i = 0; i < batch; i++) bench_release(b->r[i].p, b->r[i].n, b->r[i].key, W);
    free(b->r);
    free(b);
  }
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 512, "producers (and as many consumers)"},
      {'n', "blocks", BOPT_INT, &nblocks, NULL, 1, 1000000000, "blocks each producer allocates"},
      {'m', "max-size", BOPT_INT, &maxsz, NULL, 8, 1 << 30, "sizes are random in 8..M"},
      {'b', "batch", BOPT_INT, &batch, NULL, 1, 100000, "blocks per hand-over"},
      {0}};
  bench_parse(argc, argv, W, "Producer/consumer: T threads allocate, T other threads free.", opts);
  producers_left = nthreads;
  struct targ *a = calloc((size_t)nthreads, sizeof *a);
  pthread_t *th = calloc((size_t)nthreads * 2, sizeof *th);
  double t0 = bench_now();
  for (int i = 0; i < nthreads; i++) {
    a[i].id = i;
    int e = pthread_create(&th[2 * i], NULL, producer, &a[i]);
    if (!e) e = pthread_create(&th[2 * i + 1], NULL, consumer, NULL);
    if (e) bench_die(W, "pthread_create", e);
  }
  for (int i = 0; i < 2 * nthreads; i++) pthread_join(th[i], NULL);
  double dt = bench_now() - t0;
  char extra[128];
  snprintf(extra, sizeof extra, "ops_per_s=%.6g", (double)nthreads * (double)nblocks / dt);
  bench_result(W, nthreads, "time", dt, "s", "lower", extra);
  free(a);
  free(th);
  return 0;
}
