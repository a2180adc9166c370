/* xfree: threads that free each other's blocks in a random pattern, after the published
 * description of the rpmalloc benchmark (its "cross-thread rate").  Every thread keeps W slots of
 * live blocks; a round frees K blocks at random slots and allocates K new ones into random slots
 * (freeing what a slot still held), with sizes in 8..M falling off linearly, so small blocks are
 * the most common.  Every R-th round a thread also allocates K blocks and hands them, as one
 * batch, to another thread picked at random, which frees them at the start of its next round.
 * So every thread's heap receives frees from every other thread, a few at a time and in no
 * order: the remote-free path of a per-thread allocator under many-to-many traffic, beside the
 * ordinary churn of its own blocks.  A receiver holds at most XF_INFLIGHT batches: a sender
 * that finds it full frees its own mail and yields until there is room, so the memory in
 * flight stays bounded when the scheduler lets one thread run ahead (without the bound,
 * `-t 2 -n 2000` peaked at 328 MiB under mtheap, a thread's batches piling up for one that had
 * not started yet; 14 MiB with it).  Every block is checked before it is freed. */
#include "../common.h"

#include <sched.h>

static const char *W = "xfree";
static long long nthreads = 2, rounds = 2000, slots = 1000, per_round = 100, cross = 2,
                 maxsz = 16000;

struct rec { void *p; uint32_t n; uint64_t key; };
/* A batch handed to another thread: K blocks and the link of the receiver's stack. */
struct hand { struct hand *next; long long n; struct rec r[]; };

/* Each thread's mailbox: a stack of batches.  Senders push with a CAS; the owner takes the whole
 * stack with one exchange, so no popped node is ever read by a sender again (no ABA).  count is
 * the batches pushed and not yet freed: a sender reserves one before it pushes. */
#define XF_INFLIGHT 16
struct mailbox { _Alignas(64) _Atomic(struct hand *) top; _Atomic long count; };
static struct mailbox *box;
static _Atomic long finished;   /* threads done with their rounds */

static size_t xf_size(struct bench_rng *r) {
  /* the smaller of two uniform draws: a density falling linearly from 8 to M */
  size_t a = bench_range(r, 8, (size_t)maxsz), b = bench_range(r, 8, (size_t)maxsz);
  return a < b ? a : b;
}

static void xf_drain(int id) {
  struct hand *h = atomic_exchange_explicit(&box[id].top, NULL, memory_order_acquire);
  while (h) {
    struct hand *next = h->next;
    for (long long i = 0; i < h->n; i++) bench_release(h->r[i].p, h->r[i].n, h->r[i].key, W);
    free(h);
    atomic_fetch_sub_explicit(&box[id].count, 1, memory_order_relaxed);
    h = next;
  }
}

/* Thread `id` hands h to `to`, waiting (and freeing its own mail meanwhile, so two senders
 * waiting on each other both make room) while `to` has XF_INFLIGHT batches. */
static void xf_send(int id, int to, struct hand *h) {
  for (;;) {
    long c = atomic_load_explicit(&box[to].count, memory_order_relaxed);
    if (c < XF_INFLIGHT && atomic_compare_exchange_weak_explicit(&box[to].count, &c, c + 1,
                                                                 memory_order_relaxed,
                                                                 memory_order_relaxed))
      break;
    xf_drain(id);
    sched_yield();
  }
  struct hand *top = atomic_load_explicit(&box[to].top, memory_order_relaxed);
  do h->next = top;
  while (!atomic_compare_exchange_weak_explicit(&box[to].top, &top, h, memory_order_release,
                                                memory_order_relaxed));
}

static void *worker(void *a) {
  int id = ((struct bench_tid *)a)->id;
  struct bench_rng r;
  bench_rng_seed(&r, (uint64_t)id * 104729 + 3);
  uint64_t key = bench_mix((uint64_t)id + 11) << 32;
  struct rec *s = calloc((size_t)slots, sizeof *s);
  if (!s) bench_oom(W, (size_t)slots * sizeof *s);
  for (long long round = 0; round < rounds; round++) {
    xf_drain(id);
    for (long long k = 0; k < per_round; k++) {
      struct rec *x = &s[bench_rand(&r) % (uint64_t)slots];
      if (x->p) bench_release(x->p, x->n, x->key, W);
      x->p = NULL;
    }
    for (long long k = 0; k < per_round; k++) {
      struct rec *x = &s[bench_rand(&r) % (uint64_t)slots];
      if (x->p) bench_release(x->p, x->n, x->key, W);
      x->n = (uint32_t)xf_size(&r);
      x->key = key++;
      x->p = bench_alloc(x->n, x->key, W);
    }
    if (round % cross == cross - 1) {
      size_t sz = sizeof(struct hand) + (size_t)per_round * sizeof(struct rec);
      struct hand *h = malloc(sz);
      if (!h) bench_oom(W, sz);
      h->n = per_round;
      for (long long k = 0; k < per_round; k++) {
        h->r[k].n = (uint32_t)xf_size(&r);
        h->r[k].key = key++;
        h->r[k].p = bench_alloc(h->r[k].n, h->r[k].key, W);
      }
      int to = nthreads > 1 ? (int)((id + 1 + bench_rand(&r) % (uint64_t)(nthreads - 1)) % nthreads)
                            : id;
      xf_send(id, to, h);
    }
  }
  /* keep freeing mail until nobody can send any more (a sender may be waiting for room here) */
  atomic_fetch_add_explicit(&finished, 1, memory_order_acq_rel);
  while (atomic_load_explicit(&finished, memory_order_acquire) < nthreads) {
    xf_drain(id);
    sched_yield();
  }
  xf_drain(id);
  for (long long i = 0; i < slots; i++)
    if (s[i].p) bench_release(s[i].p, s[i].n, s[i].key, W);
  free(s);
  return NULL;
}

int main(int argc, char **argv) {
  const struct bench_opt opts[] = {
      {'t', "threads", BOPT_INT, &nthreads, NULL, 1, 1024, "threads"},
      {'n', "rounds", BOPT_INT, &rounds, NULL, 1, 1000000000, "rounds per thread"},
      {'w', "slots", BOPT_INT, &slots, NULL, 1, 100000000, "live-block slots per thread"},
      {'k', "per-round", BOPT_INT, &per_round, NULL, 1, 10000000, "blocks freed, allocated (and handed over) per round"},
      {'x', "cross-rate", BOPT_INT, &cross, NULL, 1, 1000000000, "every R-th round hands K blocks to another thread"},
      {'m', "max-size", BOPT_INT, &maxsz, NULL, 8, 1 << 30, "sizes in 8..M, falling off linearly"},
      {0}};
  bench_parse(argc, argv, W,
              "N threads churn W live blocks each, K per round, and every R-th round hand K new "
              "blocks to a random other thread, which frees them.",
              opts);
  box = aligned_alloc(64, (size_t)nthreads * sizeof *box);
  if (!box) bench_oom(W, (size_t)nthreads * sizeof *box);
  for (long long i = 0; i < nthreads; i++) {
    atomic_init(&box[i].top, NULL);
    atomic_init(&box[i].count, 0);
  }
  double dt = bench_timed_workers(W, (int)nthreads, worker);
  /* operations: K frees and K mallocs a round, plus K mallocs and K frees every R-th */
  double ops = (double)nthreads * (double)rounds * (double)per_round * 2.0 * (1.0 + 1.0 / (double)cross);
  bench_time_result(W, nthreads, dt, ops);
  free(box);
  return 0;
}
