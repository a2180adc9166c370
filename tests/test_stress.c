/* Multithreaded stress tests with content verification.  Usage: test_stress CASE [PERCENT]
 * (PERCENT scales the iteration counts; the TSan build runs with a small one).
 *
 * Every block is filled with a pattern derived from its address and size (or, for realloc
 * chains, from a chain token) and verified before it is freed: blocks handed out twice,
 * overlapping blocks, or free-list writes into live blocks abort with the offset and the bytes.
 *
 *   local      threads allocate and free random sizes on their own
 *   prodcons   one thread allocates, another frees through a lock-free ring and never allocates;
 *              RSS stays bounded while 10 million blocks pass (remote frees must be reclaimed
 *              by the allocating thread, not pile up)
 *   migrate    8 threads hand blocks to random other threads, who free them
 *   monitor    migrate, while the main thread keeps reading the statistics and calling
 *              mtheap_collect
 *   churn      20,000 short-lived threads allocate, free, and leave blocks for later threads;
 *              RSS and threads_live stay bounded, threads_seen counts every thread
 *   realloc    realloc chains across all size ranges, in several threads
 *   huge       1..64 MiB blocks allocated in one thread and freed in another
 *   inbox      the remote-free inbox (src/inbox.c): six threads free one owner's blocks at once,
 *              overflowing its 1024 slots while it sleeps, then while it keeps allocating and
 *              exits; a new thread adopts the parked heap while the frees go on.  Every block
 *              is checked before its free and no block comes back while another holds it
 *
 *   absent     an owner that allocates a burst (some large blocks), sleeps 15-45 ms and comes
 *              back to churn its own blocks, round after round, while three threads free the
 *              bursts (src/inbox.c: they free into its pages for it while it is away) and a
 *              fourth takes slow paths (its ticks drain the absent owner's inbox tail)
 *   comeback   an owner whose burst another thread freed comes back (a large malloc: a slow
 *              path, which takes its heap's lock) while a third thread's tick drains its
 *              inbox for it: round after round, until such a drain was cut short for it (the
 *              statistics count it; inbox.c leaves the owner the rest), at most 400 rounds.
 *              Every block verified before its free, every one counted back
 *
 *   borrow     rounds of four threads that each allocate a burst of a few MiB, free half and
 *              leave half in a pool that later threads free: heaps running, exited and adopted
 *              lend each other free slices (src/lend.c); the report counts borrowed spans
 *
 * The source compiles against the prefixed API (TEST_PREFIXED: mtheap_api and its TSan/UBSan
 * builds) or plain malloc (linked with, or preloaded with, libmtheap.so).
 */
#include "testutil.h"

#include <sched.h>

#ifdef TEST_PREFIXED
#define OTHER_BLOCKS 0    /* nothing but the test calls mtheap_malloc */
#else
#define OTHER_BLOCKS 512  /* glibc's own per-thread allocations (pthread, stdio) go to mtheap too */
#endif

static unsigned scale_pct = 100;
static uint64_t scaled(uint64_t n) {
  uint64_t r = n * scale_pct / 100;
  return r ? r : 1;
}

/* ------------------------------------------------------------------ local */

/* Random sizes: mostly small, some up to 64 KiB, a few large (up to 1 MiB). */
static size_t rand_size(th_rng_t *r) {
  uint64_t x = th_below(r, 1000);
  if (x < 850) return th_logsize(r, 1, 1024);
  if (x < 990) return th_logsize(r, 1025, 64 << 10);
  return th_logsize(r, (64 << 10) + 1, 1 << 20);
}

typedef struct { void *p; size_t n; } slot_t;

static void *local_worker(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  th_rng_t r = th_rng(id * 77 + 1);
  enum { SLOTS = 2000 };
  slot_t *s = calloc(SLOTS, sizeof *s);  /* the test's bookkeeping, not under test */
  TCHECK(s != NULL);
  uint64_t ops = scaled(1500000);
  for (uint64_t i = 0; i < ops; i++) {
    slot_t *x = &s[th_below(&r, SLOTS)];
    if (x->p) {
      th_verify(x->p, x->n);
      T_FREE(x->p);
      x->p = NULL;
    } else {
      size_t n = rand_size(&r);
      x->p = T_MALLOC(n);
      if (!x->p) TFAIL("malloc(%zu) failed", n);
      x->n = n;
      th_fill(x->p, n);
    }
  }
  for (int i = 0; i < SLOTS; i++)
    if (s[i].p) {
      th_verify(s[i].p, s[i].n);
      T_FREE(s[i].p);
    }
  free(s);
  return NULL;
}

static void case_local(void) {
  enum { T = 4 };
  pthread_t t[T];
  for (uintptr_t i = 0; i < T; i++) th_thread(&t[i], local_worker, (void *)i);
  for (int i = 0; i < T; i++) th_join(t[i]);
}

/* ------------------------------------------------------------------ prodcons */

/* Single-producer single-consumer ring: the consumer must not allocate, so no locks or queues
 * that could malloc behind our back. */
#define RING 4096
static struct {
  _Alignas(64) _Atomic uint64_t head;  /* written by the producer */
  _Alignas(64) _Atomic uint64_t tail;  /* written by the consumer */
  _Alignas(64) slot_t items[RING];
} ring;

static void *pc_producer(void *arg) {
  uint64_t total = *(uint64_t *)arg;
  th_rng_t r = th_rng(99);
  size_t max_live = (size_t)RING * 512;
  size_t warm_rss = 0;
  uint64_t warm_at = total / 10;
  size_t bound = 0;
  for (uint64_t i = 0; i < total; i++) {
    size_t n = 16 + th_below(&r, 497);  /* 16..512 */
    void *p = T_MALLOC(n);
    if (!p) TFAIL("malloc(%zu) failed", n);
    th_fill(p, n);
    uint64_t h = atomic_load_explicit(&ring.head, memory_order_relaxed);
    while (h - atomic_load_explicit(&ring.tail, memory_order_acquire) >= RING) sched_yield();
    ring.items[h % RING] = (slot_t){p, n};
    atomic_store_explicit(&ring.head, h + 1, memory_order_release);
    if (i == warm_at) {
      warm_rss = th_rss();
      /* Generous: 64 MiB over what the process had after warm-up, plus the live blocks. */
      bound = warm_rss + (((size_t)64 << 20) + max_live) * TH_RSS_FACTOR;
    }
    if (i > warm_at && (i & 0xffff) == 0) {
      size_t rss = th_rss();
      if (rss > bound)
        TFAIL("producer/consumer: RSS %zu MiB after %" PRIu64 " blocks exceeds %zu MiB (RSS after "
              "warm-up %zu MiB): freed blocks are not being reused",
              rss >> 20, i, bound >> 20, warm_rss >> 20);
    }
  }
  return NULL;
}

static void *pc_consumer(void *arg) {
  uint64_t total = *(uint64_t *)arg, got = 0;
  while (got < total) {
    uint64_t t = atomic_load_explicit(&ring.tail, memory_order_relaxed);
    if (t == atomic_load_explicit(&ring.head, memory_order_acquire)) {
      sched_yield();
      continue;
    }
    slot_t it = ring.items[t % RING];
    atomic_store_explicit(&ring.tail, t + 1, memory_order_release);
    th_verify(it.p, it.n);
    T_FREE(it.p);
    got++;
  }
  return NULL;
}

static void case_prodcons(void) {
  uint64_t total = scaled(10000000);
  struct mtheap_stats s0, s1;
  th_stats(&s0);
  pthread_t a, b;
  th_thread(&b, pc_consumer, &total);
  th_thread(&a, pc_producer, &total);
  th_join(a);
  th_join(b);
  th_stats(&s1);
  TCHECKF(s1.remote_frees >= s0.remote_frees + total / 2,
          "remote_frees %" PRIu64 " -> %" PRIu64 " while %" PRIu64 " blocks were freed by another thread",
          s0.remote_frees, s1.remote_frees, total);
}

/* ------------------------------------------------------------------ migrate */

#define MIG_T 8
typedef struct mig_msg { struct mig_msg *next; size_t n; } mig_msg_t;  /* lives in the block */
static struct {
  _Alignas(64) _Atomic(mig_msg_t *) inbox;
} mig[MIG_T];
static _Atomic int mig_running;

static void mig_drain(int id) {
  mig_msg_t *m = atomic_exchange_explicit(&mig[id].inbox, NULL, memory_order_acquire);
  while (m) {
    mig_msg_t *next = m->next;
    size_t n = m->n;
    /* The link overwrote the block's head; the rest still carries the sender's pattern. */
    th_verify_skip(m, sizeof *m, n);
    T_FREE(m);
    m = next;
  }
}

static void *mig_worker(void *arg) {
  int id = (int)(uintptr_t)arg;
  th_rng_t r = th_rng((uint64_t)id * 1000 + 7);
  enum { KEEP = 256 };
  slot_t keep[KEEP] = {{0}};
  uint64_t ops = scaled(300000);
  for (uint64_t i = 0; i < ops; i++) {
    size_t n = rand_size(&r);
    if (n < sizeof(mig_msg_t)) n = sizeof(mig_msg_t);
    void *p = T_MALLOC(n);
    if (!p) TFAIL("malloc(%zu) failed", n);
    th_fill(p, n);
    if (th_below(&r, 2)) {
      /* Send it through the receiver's lock-free stack; the link lives in the block itself, so
       * the receiving thread never allocates to accept it. */
      int to = (int)th_below(&r, MIG_T);
      mig_msg_t *m = p;
      m->n = n;
      m->next = atomic_load_explicit(&mig[to].inbox, memory_order_relaxed);
      while (!atomic_compare_exchange_weak_explicit(&mig[to].inbox, &m->next, m, memory_order_release,
                                                    memory_order_relaxed)) {}
    } else {
      slot_t *k = &keep[th_below(&r, KEEP)];
      if (k->p) {
        th_verify(k->p, k->n);
        T_FREE(k->p);
      }
      *k = (slot_t){p, n};
    }
    if ((i & 63) == 0) mig_drain(id);
  }
  for (int k = 0; k < KEEP; k++)
    if (keep[k].p) {
      th_verify(keep[k].p, keep[k].n);
      T_FREE(keep[k].p);
    }
  atomic_fetch_sub(&mig_running, 1);
  while (atomic_load(&mig_running) > 0) {
    mig_drain(id);
    sched_yield();
  }
  mig_drain(id);
  return NULL;
}

static void case_migrate(bool monitor) {
  struct mtheap_stats s0, s1;
  th_stats(&s0);
  atomic_store(&mig_running, MIG_T);
  pthread_t t[MIG_T];
  for (uintptr_t i = 0; i < MIG_T; i++) th_thread(&t[i], mig_worker, (void *)i);
  /* "monitor": statistics and collection run beside the workers, as a monitoring thread would;
   * under TSan this checks that readers of other threads' heaps are race-free. */
  FILE *devnull = monitor ? fopen("/dev/null", "w") : NULL;
  TCHECK(!monitor || devnull != NULL);
  for (unsigned k = 0; monitor && atomic_load(&mig_running) > 0; k++) {
    /* Only that it neither crashes nor races: the numbers are a moving snapshot. */
    struct mtheap_stats mid;
    th_stats(&mid);
    if (k % 16 == 0) mtheap_stats_print(devnull);
    mtheap_collect(false);
    th_sleep_ms(5);
  }
  if (devnull) fclose(devnull);
  for (int i = 0; i < MIG_T; i++) th_join(t[i]);
  /* Messages sent after the receiver's last drain. */
  for (int i = 0; i < MIG_T; i++) mig_drain(i);
  th_stats(&s1);
  TCHECKF(s1.remote_frees > s0.remote_frees, "remote_frees %" PRIu64 " -> %" PRIu64, s0.remote_frees,
          s1.remote_frees);
  TCHECKF(s1.frees - s0.frees + OTHER_BLOCKS >= s1.mallocs - s0.mallocs,
          "every block was freed, yet frees grew by %" PRIu64 " and mallocs by %" PRIu64,
          s1.frees - s0.frees, s1.mallocs - s0.mallocs);
  TCHECKF(s1.in_use <= s0.in_use + (1 << 20), "in_use %zu -> %zu after freeing everything", s0.in_use,
          s1.in_use);
}

/* ------------------------------------------------------------------ churn */

#define ORPHANS 4096
static pthread_mutex_t orphan_lock = PTHREAD_MUTEX_INITIALIZER;
static slot_t orphans[ORPHANS];
static size_t orphan_bytes, orphan_bytes_peak;  /* under orphan_lock */

static void *churn_worker(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  th_rng_t r = th_rng(id + 5);
  enum { K = 24 };
  slot_t mine[K];
  for (int k = 0; k < K; k++) {
    size_t n = k == 0 ? th_logsize(&r, 64 << 10, 600 << 10) : rand_size(&r);
    mine[k].p = T_MALLOC(n);
    if (!mine[k].p) TFAIL("malloc(%zu) failed", n);
    mine[k].n = n;
    th_fill(mine[k].p, n);
  }
  /* Half stay behind for a later thread; whatever was in their slot is freed here. */
  for (int k = 0; k < K; k++) {
    slot_t old = {0};
    if (k & 1) {
      pthread_mutex_lock(&orphan_lock);
      slot_t *o = &orphans[th_below(&r, ORPHANS)];
      old = *o;
      *o = mine[k];
      orphan_bytes += mine[k].n - old.n;
      if (orphan_bytes > orphan_bytes_peak) orphan_bytes_peak = orphan_bytes;
      pthread_mutex_unlock(&orphan_lock);
    } else {
      old = mine[k];
    }
    if (old.p) {
      th_verify(old.p, old.n);
      T_FREE(old.p);
    }
  }
  return NULL;
}

static void case_churn(void) {
  uint64_t nthreads = scaled(20000);
  enum { BATCH = 8 };
  struct mtheap_stats s0, st;
  th_stats(&s0);
  size_t start_rss = th_rss();
  for (uint64_t done = 0; done < nthreads; done += BATCH) {
    pthread_t t[BATCH];
    for (int i = 0; i < BATCH; i++) th_thread(&t[i], churn_worker, (void *)(uintptr_t)(done + i));
    for (int i = 0; i < BATCH; i++) th_join(t[i]);
    if (done / BATCH % 64 == 0 || done + BATCH >= nthreads) {
      th_stats(&st);
      /* Exited threads must give up their heaps: at most this batch's and the main thread. */
      TCHECKF(st.threads_live <= 2 * BATCH + 2, "threads_live %" PRIu64 " after %" PRIu64
              " threads were created and joined, %d at a time", st.threads_live, done + BATCH, BATCH);
      pthread_mutex_lock(&orphan_lock);
      size_t live_peak = orphan_bytes_peak;
      pthread_mutex_unlock(&orphan_lock);
      /* Generous: what the process had before, 96 MiB of caches and per-thread slack, and three
       * times the peak of live data for fragmentation.  Memory that piles up per thread (heaps
       * not reused, pages of dead threads not reclaimed) exceeds it long before 20,000 threads. */
      size_t bound = start_rss + (((size_t)96 << 20) + live_peak * 3) * TH_RSS_FACTOR;
      size_t rss = th_rss();
      TCHECKF(rss <= bound,
              "RSS %zu MiB after %" PRIu64 " threads exceeds %zu MiB (%zu MiB before; live orphan "
              "blocks peaked at %zu MiB): exited threads' memory is not reused",
              rss >> 20, done + BATCH, bound >> 20, start_rss >> 20, live_peak >> 20);
    }
  }
  th_stats(&st);
  /* Heaps are recycled: no more are created than threads were ever alive at once. */
  uint64_t created = (st.threads_seen - st.heaps_reused) - (s0.threads_seen - s0.heaps_reused);
  TCHECKF(created <= 2 * BATCH + 2, "%" PRIu64 " heaps created for %" PRIu64 " threads, at most %d alive at once",
          created, nthreads, BATCH + 1);
  TCHECKF(st.threads_seen >= s0.threads_seen + nthreads, "threads_seen %" PRIu64 " -> %" PRIu64
          " after %" PRIu64 " allocating threads", s0.threads_seen, st.threads_seen, nthreads);
  for (int i = 0; i < ORPHANS; i++)
    if (orphans[i].p) {
      th_verify(orphans[i].p, orphans[i].n);
      T_FREE(orphans[i].p);
      orphans[i].p = NULL;
    }
}

/* ------------------------------------------------------------------ realloc */

static void *realloc_worker(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  th_rng_t r = th_rng(id * 3 + 11);
  enum { CH = 64 };
  struct { void *p; size_t n; uint64_t seed; } ch[CH] = {{0}};
  uint64_t ops = scaled(100000);
  for (uint64_t i = 0; i < ops; i++) {
    int c = (int)th_below(&r, CH);
    uint64_t x = th_below(&r, 1000);
    size_t n = x < 700 ? th_logsize(&r, 1, 4096)
             : x < 950 ? th_logsize(&r, 4097, 256 << 10)
             : x < 998 ? th_logsize(&r, (256 << 10) + 1, 3 << 20)
                       : th_logsize(&r, (4 << 20) + 1, 24 << 20);
    if (th_below(&r, 4) == 0 && ch[c].n) n = ch[c].n + th_below(&r, 64); /* small growth in place */
    if (th_below(&r, 50) == 0) n = 0;                                    /* realloc(p, 0) frees */
    void *q = T_REALLOC(ch[c].p, n);
    if (n == 0) {
      if (ch[c].p && q) TFAIL("realloc(%p, 0) returned %p", ch[c].p, q);
      if (!ch[c].p && q) T_FREE(q);  /* realloc(NULL, 0) is malloc(0) */
      ch[c].p = NULL;
      ch[c].n = 0;
      continue;
    }
    if (!q) TFAIL("realloc(%p, %zu) failed", ch[c].p, n);
    if (((uintptr_t)q & 15) && n >= 16) TFAIL("realloc returned %p for %zu bytes", q, n);
    size_t keep = ch[c].n < n ? ch[c].n : n;
    if (keep) th_verify_seed(q, keep, ch[c].n, ch[c].seed);
    ch[c].seed = th_mix64(ch[c].seed + i + id);
    /* A fresh seed each step, so a realloc that returned a stale copy is caught. */
    th_fill_seed(q, n, ch[c].seed);
    ch[c].p = q;
    ch[c].n = n;
  }
  for (int c = 0; c < CH; c++)
    if (ch[c].p) {
      th_verify_seed(ch[c].p, ch[c].n, ch[c].n, ch[c].seed);
      T_FREE(ch[c].p);
    }
  return NULL;
}

static void case_realloc(void) {
  enum { T = 3 };
  pthread_t t[T];
  for (uintptr_t i = 0; i < T; i++) th_thread(&t[i], realloc_worker, (void *)i);
  for (int i = 0; i < T; i++) th_join(t[i]);
}

/* ------------------------------------------------------------------ huge */

#define HUGE_T 3
#define HUGE_Q 8
static struct {
  pthread_mutex_t lock;
  slot_t q[HUGE_Q];
  int n;
} hbox[HUGE_T];

static void *huge_worker(void *arg) {
  int id = (int)(uintptr_t)arg;
  th_rng_t r = th_rng((uint64_t)id + 4242);
  uint64_t ops = scaled(150);
  for (uint64_t i = 0; i < ops; i++) {
    size_t n = th_logsize(&r, 1 << 20, 64 << 20) + th_below(&r, 4096);
    if (n > ((size_t)64 << 20)) n = (size_t)64 << 20;
    void *p = T_MALLOC(n);
    if (!p) TFAIL("malloc(%zu) failed", n);
    if ((uintptr_t)p & 15) TFAIL("huge block %p misaligned", p);
    th_fill(p, n);
    /* Pass it to another thread's box; take back whatever is in ours. */
    int to = (id + 1 + (int)th_below(&r, HUGE_T - 1)) % HUGE_T;
    slot_t evict = {0};
    pthread_mutex_lock(&hbox[to].lock);
    if (hbox[to].n == HUGE_Q) evict = hbox[to].q[--hbox[to].n];
    hbox[to].q[hbox[to].n++] = (slot_t){p, n};
    pthread_mutex_unlock(&hbox[to].lock);
    if (evict.p) {
      th_verify(evict.p, evict.n);
      T_FREE(evict.p);
    }
    pthread_mutex_lock(&hbox[id].lock);
    slot_t mine = hbox[id].n ? hbox[id].q[--hbox[id].n] : (slot_t){0};
    pthread_mutex_unlock(&hbox[id].lock);
    if (mine.p) {
      th_verify(mine.p, mine.n);
      T_FREE(mine.p);
    }
  }
  return NULL;
}

static void case_huge(void) {
  struct mtheap_stats s0, s1;
  th_stats(&s0);
  pthread_t t[HUGE_T];
  for (int i = 0; i < HUGE_T; i++) pthread_mutex_init(&hbox[i].lock, NULL);
  for (uintptr_t i = 0; i < HUGE_T; i++) th_thread(&t[i], huge_worker, (void *)i);
  for (int i = 0; i < HUGE_T; i++) th_join(t[i]);
  for (int i = 0; i < HUGE_T; i++)
    while (hbox[i].n) {
      slot_t s = hbox[i].q[--hbox[i].n];
      th_verify(s.p, s.n);
      T_FREE(s.p);
    }
  th_stats(&s1);
  TCHECKF(s1.huge_mallocs > s0.huge_mallocs, "huge_mallocs %" PRIu64 " -> %" PRIu64, s0.huge_mallocs,
          s1.huge_mallocs);
  TCHECKF(s1.in_use <= s0.in_use + (1 << 20), "in_use %zu -> %zu after freeing all huge blocks",
          s0.in_use, s1.in_use);
}

/* ------------------------------------------------------------------ inbox */

/* Blocks one owner allocates and other threads free, handed over a slice at a time: block i
 * is filled with seed i and verified before its free. */
typedef struct {
  void **blocks;
  size_t *sizes;
  uint64_t n, slice;
  _Atomic uint64_t next;       /* next hand-over to take */
  _Atomic uint64_t published;  /* blocks the owner has allocated and filled */
  _Atomic uint64_t freed;      /* blocks the freers have freed */
} handover_t;

static void *handover_freer(void *arg) {
  handover_t *h = arg;
  for (;;) {
    uint64_t k = atomic_fetch_add(&h->next, h->slice);
    if (k >= h->n) return NULL;
    uint64_t end = k + h->slice < h->n ? k + h->slice : h->n;
    while (atomic_load_explicit(&h->published, memory_order_acquire) < end) sched_yield();
    for (uint64_t i = k; i < end; i++) {
      th_verify_seed(h->blocks[i], h->sizes[i], h->sizes[i], i);
      T_FREE(h->blocks[i]);
    }
    atomic_fetch_add(&h->freed, end - k);
  }
}

#define IB_FREERS 6
#define IB_SLICE 4096   /* blocks per hand-over */
static handover_t ib = {.slice = IB_SLICE};

/* Allocates the blocks the freers free; between rounds it allocates and frees locally, which
 * drains its inbox while the freers keep filling it; then it exits with frees still coming. */
static void *ib_owner(void *arg) {
  uint64_t upto = *(uint64_t *)arg;
  th_rng_t r = th_rng(upto);
  void *mine[64] = {0};
  for (uint64_t i = atomic_load(&ib.published); i < upto; i++) {
    ib.sizes[i] = 8 + th_below(&r, i % 97 == 0 ? 20000 : 400);
    ib.blocks[i] = T_MALLOC(ib.sizes[i]);
    TCHECK(ib.blocks[i] != NULL);
    th_fill_seed(ib.blocks[i], ib.sizes[i], i);
    if ((i & 1023) == 1023) atomic_store_explicit(&ib.published, i + 1, memory_order_release);
    size_t j = th_below(&r, 64);
    if (mine[j]) T_FREE(mine[j]);
    mine[j] = T_MALLOC(16 + th_below(&r, 200));
    TCHECK(mine[j] != NULL);
  }
  atomic_store_explicit(&ib.published, upto, memory_order_release);
  th_sleep_ms(30);   /* no slow path meanwhile: thousands of frees overflow the 1024 slots */
  for (int j = 0; j < 64; j++) T_FREE(mine[j]);
  return NULL;
}

static void case_inbox(void) {
  ib.n = scaled(600000) / IB_SLICE * IB_SLICE + IB_SLICE;
  ib.blocks = T_MALLOC(ib.n * sizeof *ib.blocks);
  ib.sizes = T_MALLOC(ib.n * sizeof *ib.sizes);
  TCHECK(ib.blocks && ib.sizes);
  struct mtheap_stats s0, s1;
  th_stats(&s0);
  /* first owner: a third of the blocks, then it exits while the freers work */
  uint64_t third = ib.n / 3 / IB_SLICE * IB_SLICE;
  pthread_t own, fr[IB_FREERS];
  th_thread(&own, ib_owner, &third);
  for (int i = 0; i < IB_FREERS; i++) th_thread(&fr[i], handover_freer, &ib);
  th_join(own);
  /* the second owner adopts the parked heap (its pages, its inbox) and allocates the rest */
  uint64_t all = ib.n;
  th_thread(&own, ib_owner, &all);
  th_join(own);
  for (int i = 0; i < IB_FREERS; i++) th_join(fr[i]);
  mtheap_collect(true);   /* drains the abandoned heap's inbox */
  th_stats(&s1);
  TCHECKF(s1.heaps_reused > s0.heaps_reused, "heaps_reused %" PRIu64 ": the second owner did not adopt a parked heap", s1.heaps_reused);
  TCHECKF(s1.remote_frees >= s0.remote_frees + ib.n,
          "remote_frees %" PRIu64 " -> %" PRIu64 " while %" PRIu64 " blocks were freed by other threads",
          s0.remote_frees, s1.remote_frees, ib.n);
  /* the sleeping owner made the freers use the overflow list; both were drained */
  TCHECKF(s1.inbox_overflows > s0.inbox_overflows, "no remote free overflowed the inbox (%" PRIu64 ")",
          s1.inbox_overflows);
  TCHECKF(s1.inbox_drains > s0.inbox_drains, "inbox_drains %" PRIu64 " did not grow", s1.inbox_drains);
  TCHECKF(s1.shared_rmw - s0.shared_rmw >= (s1.remote_frees - s0.remote_frees) + (s1.inbox_overflows - s0.inbox_overflows),
          "shared_rmw %" PRIu64 " -> %" PRIu64 " counts less than the remote frees", s0.shared_rmw, s1.shared_rmw);
  T_FREE(ib.blocks);
  T_FREE(ib.sizes);
  /* every block came back: what is live now is only what other code holds */
  TCHECKF(s1.mallocs - s0.mallocs <= s1.frees - s0.frees + OTHER_BLOCKS + 2,
          "%" PRIu64 " mallocs but %" PRIu64 " frees counted", s1.mallocs - s0.mallocs, s1.frees - s0.frees);
}

/* ---- absent: an owner that sleeps between its bursts while others free its blocks */
#define AB_FREERS 3
#define AB_SLICE 512
#define AB_PER_ROUND 12288
static handover_t ab = {.slice = AB_SLICE};
static _Atomic int ab_done;

/* Each round: a burst of blocks for the freers (some large), a sleep with no slow path -- the
 * freers find its inbox full and it away, and free into its pages for it -- then it comes back
 * and churns blocks of its own, full pages and large spans among them.  Odd rounds sleep until
 * the freers are done with the burst and 60 ms at least (so the slower builds, TSan's, meet an
 * absent owner too, and the fourth thread's ticks see its inbox tail),
 * even ones 15-45 ms, and it comes back while they may still be at it. */
static void *ab_owner(void *arg) {
  uint64_t rounds = *(uint64_t *)arg;
  th_rng_t r = th_rng(rounds);
  void *mine[256] = {0};
  size_t mine_n[256] = {0};
  for (uint64_t round = 0; round < rounds; round++) {
    uint64_t lo = round * AB_PER_ROUND, hi = lo + AB_PER_ROUND;
    for (uint64_t i = lo; i < hi; i++) {
      ab.sizes[i] = 8 + th_below(&r, i % 211 == 0 ? 300000 : 600);
      ab.blocks[i] = T_MALLOC(ab.sizes[i]);
      TCHECK(ab.blocks[i] != NULL);
      th_fill_seed(ab.blocks[i], ab.sizes[i], i);
      if ((i & (AB_SLICE - 1)) == AB_SLICE - 1) atomic_store_explicit(&ab.published, i + 1, memory_order_release);
    }
    atomic_store_explicit(&ab.published, hi, memory_order_release);
    if (round & 1) {
      uint64_t t0 = th_now_ms();
      while (atomic_load(&ab.freed) < hi || th_now_ms() - t0 < 60) th_sleep_ms(1);
    } else {
      th_sleep_ms(15 + (int)th_below(&r, 30));
    }
    for (int k = 0; k < 3000; k++) {
      size_t j = th_below(&r, 256);
      if (mine[j]) {
        th_verify(mine[j], mine_n[j]);
        T_FREE(mine[j]);
      }
      mine_n[j] = 16 + th_below(&r, k % 61 == 0 ? 200000 : 3000);
      mine[j] = T_MALLOC(mine_n[j]);
      TCHECK(mine[j] != NULL);
      th_fill(mine[j], mine_n[j]);
    }
  }
  for (int j = 0; j < 256; j++) {
    if (!mine[j]) continue;
    th_verify(mine[j], mine_n[j]);
    T_FREE(mine[j]);
  }
  return NULL;
}

/* Slow paths of its own the whole time (a large block's malloc is one, every time): its ticks
 * take in the absent owner's inbox tail. */
static void *ab_ticker(void *arg) {
  (void)arg;
  while (!atomic_load(&ab_done)) {
    size_t n = 150000 + (size_t)(atomic_load(&ab.next) % 7) * 4096;
    char *p = T_MALLOC(n);
    TCHECK(p != NULL);
    p[0] = 1;
    p[n - 1] = 2;
    TCHECK(p[0] == 1 && p[n - 1] == 2);
    T_FREE(p);
  }
  return NULL;
}

/* The number after key in the statistics report. */

/* "freed for absent owners N" */
static uint64_t ab_freed_for(void) { return th_report_count("freed for absent owners "); }

static void case_absent(void) {
  uint64_t rounds = 2 + scaled(6);
  ab.n = rounds * AB_PER_ROUND;
  ab.blocks = T_MALLOC(ab.n * sizeof *ab.blocks);
  ab.sizes = T_MALLOC(ab.n * sizeof *ab.sizes);
  TCHECK(ab.blocks && ab.sizes);
  struct mtheap_stats s0, s1;
  th_stats(&s0);
  uint64_t for0 = ab_freed_for();
  pthread_t own, tick, fr[AB_FREERS];
  th_thread(&own, ab_owner, &rounds);
  th_thread(&tick, ab_ticker, NULL);
  for (int i = 0; i < AB_FREERS; i++) th_thread(&fr[i], handover_freer, &ab);
  for (int i = 0; i < AB_FREERS; i++) th_join(fr[i]);
  th_join(own);
  atomic_store(&ab_done, 1);
  th_join(tick);
  mtheap_collect(true);
  th_stats(&s1);
  uint64_t for1 = ab_freed_for();
  TCHECKF(for1 > for0, "no block was freed for the sleeping owner (%" PRIu64 " -> %" PRIu64 ")", for0, for1);
  T_FREE(ab.blocks);
  T_FREE(ab.sizes);
  TCHECKF(s1.mallocs - s0.mallocs <= s1.frees - s0.frees + OTHER_BLOCKS + 2,
          "%" PRIu64 " mallocs but %" PRIu64 " frees counted", s1.mallocs - s0.mallocs, s1.frees - s0.frees);
}

/* ---- comeback: the owner comes back while another thread drains its inbox for it */
#define CB_ROUNDS 400      /* a round meets a drain by chance: 1 in 3 to 1 in 20 (loaded, sanitizers) */
#define CB_MAX_MS 60000    /* and stops trying after this, well before the watchdog */
static void **cb_blocks;
static size_t cb_n;
static _Atomic uint64_t cb_ready, cb_freed;   /* rounds allocated, rounds freed */
static _Atomic int cb_done;

/* "(drains for them cut short, the owner back and waiting: N)" */
static uint64_t cb_cut_short(void) { return th_report_count("the owner back and waiting: "); }

/* Each round: a burst of 2 cb_n small blocks, every other one freed at once (so no page of the
 * burst is full: the freer, finding the owner away, cannot free into them itself and leaves
 * the whole list to the ticker's drain, however slow it is), the rest published; then no slow
 * path for 8-24 ms and the come-back.  The ticker's drain starts MTH_ABSENT_MS after the
 * frees began and takes milliseconds (a block's write each, 150 000 blocks): some rounds come
 * back in the middle of it, on a loaded machine and in the sanitizers' builds alike. */
static void *cb_owner(void *arg) {
  uint64_t *cut = arg, before = cb_cut_short(), t0 = th_now_ms();
  for (uint64_t round = 1; round <= CB_ROUNDS && *cut == 0 && th_now_ms() - t0 < CB_MAX_MS; round++) {
    for (size_t i = 0; i < 2 * cb_n; i++) {
      size_t n = 16 + (i % 5) * 16;
      void *b = T_MALLOC(n);
      TCHECK(b != NULL);
      th_fill_seed(b, n, i + round);
      if (i & 1) cb_blocks[cb_n + i / 2] = b;   /* freed below, after the burst */
      else cb_blocks[i / 2] = b;
    }
    for (size_t i = cb_n; i < 2 * cb_n; i++) T_FREE(cb_blocks[i]);
    atomic_store_explicit(&cb_ready, round, memory_order_release);
    /* a different point each round: odd rounds in 9-14 ms, where the drain mostly is (10-13 ms
     * on this machine's builds), even ones in 8-24 ms, in case it is elsewhere on another */
    long us = (round & 1) ? 9000 + (long)(round * 2377 % 5000) : 8000 + (long)(round * 2377 % 16000);
    struct timespec ts = {0, us * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    char *p = T_MALLOC(200000);   /* a large block: a slow path every time */
    TCHECK(p != NULL);
    p[0] = 1;
    T_FREE(p);
    while (atomic_load_explicit(&cb_freed, memory_order_acquire) < round) th_sleep_ms(1);
    for (int k = 0; k < 200; k++) T_FREE(T_MALLOC(16 + (size_t)k * 8));   /* takes the rest in */
    *cut = cb_cut_short() - before;
  }
  atomic_store(&cb_done, 1);
  return NULL;
}

static void *cb_freer(void *arg) {
  (void)arg;
  for (uint64_t round = 1; round <= CB_ROUNDS; round++) {
    while (atomic_load_explicit(&cb_ready, memory_order_acquire) < round) {
      if (atomic_load(&cb_done)) return NULL;
      sched_yield();
    }
    for (size_t i = 0; i < cb_n; i++) {
      size_t n = 16 + (2 * i % 5) * 16;
      th_verify_seed(cb_blocks[i], n, n, 2 * i + round);
      T_FREE(cb_blocks[i]);
    }
    atomic_store_explicit(&cb_freed, round, memory_order_release);
  }
  return NULL;
}

/* Slow paths of its own, a large malloc each: its ticks find the owner away and drain its
 * inbox for it. */
static void *cb_ticker(void *arg) {
  (void)arg;
  while (!atomic_load(&cb_done)) {
    char *p = T_MALLOC(150000);
    TCHECK(p != NULL);
    p[0] = 1;
    T_FREE(p);
  }
  return NULL;
}

static void case_comeback(void) {
  cb_n = scaled(150000) < 100000 ? 100000 : scaled(150000);   /* a drain long enough to meet */
  cb_blocks = T_MALLOC(2 * cb_n * sizeof *cb_blocks);
  TCHECK(cb_blocks != NULL);
  struct mtheap_stats s0, s1;
  th_stats(&s0);
  uint64_t cut = 0;
  pthread_t own, fr, tick;
  th_thread(&own, cb_owner, &cut);
  th_thread(&fr, cb_freer, NULL);
  th_thread(&tick, cb_ticker, NULL);
  th_join(own);
  th_join(fr);
  th_join(tick);
  TCHECKF(cut > 0, "in %d rounds (or %d s), no drain for the absent owner was cut short when it "
          "came back", CB_ROUNDS, CB_MAX_MS / 1000);
  mtheap_collect(true);
  th_stats(&s1);
  T_FREE(cb_blocks);
  TCHECKF(s1.mallocs - s0.mallocs <= s1.frees - s0.frees + OTHER_BLOCKS + 2,
          "%" PRIu64 " mallocs but %" PRIu64 " frees counted", s1.mallocs - s0.mallocs, s1.frees - s0.frees);
}

/* ------------------------------------------------------------------ borrow */

/* Threads in rounds, four at a time, each allocating a burst of a few MiB (small to 1 MiB
 * blocks), freeing half of it and leaving the other half in a pool that later threads free:
 * heaps of threads that have exited, been adopted or are running hold free resident slices
 * that the others borrow (src/lend.c), and blocks on borrowed slices are freed by their own
 * thread, by others while it runs, and after it has exited.  Every block is verified before
 * its free; the report must count borrowed spans. */
enum { BP_SLOTS = 4096 };
static slot_t bp_pool[BP_SLOTS];
static pthread_mutex_t bp_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t bp_size(th_rng_t *r) {
  uint64_t x = th_below(r, 100);
  if (x < 60) return th_logsize(r, 16, 4096);
  if (x < 95) return th_logsize(r, 4097, 128 << 10);
  return th_logsize(r, (128 << 10) + 1, 1 << 20);
}

static void *bp_worker(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  th_rng_t r = th_rng(id * 131 + 7);
  size_t n = 100 + (size_t)scaled(1500);
  slot_t *mine = calloc(n, sizeof *mine);   /* bookkeeping, not under test */
  TCHECK(mine != NULL);
  for (size_t i = 0; i < n; i++) {
    mine[i].n = bp_size(&r);
    mine[i].p = T_MALLOC(mine[i].n);
    if (!mine[i].p) TFAIL("malloc(%zu) failed", mine[i].n);
    th_fill(mine[i].p, mine[i].n);
  }
  for (size_t i = 0; i < n; i++) {
    if (th_below(&r, 2) == 0) {
      th_verify(mine[i].p, mine[i].n);
      T_FREE(mine[i].p);
      continue;
    }
    /* into the pool; what the slot held, some earlier thread's block, is ours to free */
    pthread_mutex_lock(&bp_lock);
    slot_t *x = &bp_pool[th_below(&r, BP_SLOTS)], old = *x;
    *x = mine[i];
    pthread_mutex_unlock(&bp_lock);
    if (old.p) {
      th_verify(old.p, old.n);
      T_FREE(old.p);
    }
  }
  free(mine);
  return NULL;
}

static void case_borrow(void) {
  const char *key = "spans on other heaps' free slices ";
  uint64_t before = th_report_count(key);
  uint64_t rounds = 4 + scaled(40);
  for (uint64_t round = 0; round < rounds; round++) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) th_thread(&t[i], bp_worker, (void *)(uintptr_t)(round * 4 + (uint64_t)i));
    for (int i = 0; i < 4; i++) th_join(t[i]);
  }
  for (int i = 0; i < BP_SLOTS; i++)
    if (bp_pool[i].p) {
      th_verify(bp_pool[i].p, bp_pool[i].n);
      T_FREE(bp_pool[i].p);
      bp_pool[i].p = NULL;
    }
  uint64_t n = th_report_count(key) - before;
  printf("borrowed spans: %" PRIu64 "\n", n);
  TCHECKF(n > 0, "%" PRIu64 " rounds of threads with bursts of a few MiB borrowed no span", rounds);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s local|prodcons|migrate|monitor|churn|realloc|huge|inbox|absent|comeback|borrow [percent]\n", argv[0]);
    return 2;
  }
  if (argc > 2) scale_pct = (unsigned)atoi(argv[2]);
  if (scale_pct == 0) TFAIL("bad percent %s", argv[2]);
  th_require_mtheap_extras();
  const char *c = argv[1];
  th_watchdog(110, c);
  uint64_t t0 = th_now_ms();
  if (!strcmp(c, "local")) case_local();
  else if (!strcmp(c, "prodcons")) case_prodcons();
  else if (!strcmp(c, "migrate")) case_migrate(false);
  else if (!strcmp(c, "monitor")) case_migrate(true);
  else if (!strcmp(c, "churn")) case_churn();
  else if (!strcmp(c, "realloc")) case_realloc();
  else if (!strcmp(c, "huge")) case_huge();
  else if (!strcmp(c, "inbox")) case_inbox();
  else if (!strcmp(c, "absent")) case_absent();
  else if (!strcmp(c, "comeback")) case_comeback();
  else if (!strcmp(c, "borrow")) case_borrow();
  else TFAIL("unknown case %s", c);
  printf("test_stress %s (%s, %u%%): passed in %" PRIu64 " ms, peak RSS now %zu MiB\n", c, T_API_NAME,
         scale_pct, th_now_ms() - t0, th_rss() >> 20);
  return 0;
}
