/* fork() while other threads allocate (linked with libmtheap.so, so every malloc is mtheap's).
 *
 * Proves: after fork the child's heap is consistent whatever the other threads were doing:
 * the child can malloc/free small, large and huge blocks, start a thread that allocates, free
 * blocks the parent's threads allocated before the fork (their owners do not exist in the
 * child), find their contents intact, and exit(0) - repeatedly.  A child that deadlocks on a
 * lock held at fork time is killed by its alarm, which fails the test instead of hanging it.
 */
#include "testutil.h"

#define WORKERS 3
#define SHARED 64

static _Atomic bool stop;
/* Blocks published by the workers, stable once published (written before the release store). */
static struct {
  _Atomic(void *) p;
  size_t n;
} shared[WORKERS][SHARED];

static void *worker(void *arg) {
  int id = (int)(uintptr_t)arg;
  th_rng_t r = th_rng((uint64_t)id + 17);
  enum { K = 512 };
  static __thread struct { void *p; size_t n; } slot[K];
  uint64_t i = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    int k = (int)th_below(&r, K);
    if (slot[k].p) {
      th_verify(slot[k].p, slot[k].n);
      free(slot[k].p);
      slot[k].p = NULL;
    } else {
      size_t n = th_mixed_size(&r, 512 << 10, 1 << 20, 8 << 20);
      slot[k].p = malloc(n);
      if (!slot[k].p) TFAIL("malloc(%zu) failed", n);
      slot[k].n = n;
      th_fill(slot[k].p, n);
    }
    /* Refresh one published block now and then: the old one is freed here, by its owner. */
    if ((i++ & 255) == 0) {
      int s = (int)th_below(&r, SHARED);
      size_t n = th_logsize(&r, 16, 100000);
      void *p = malloc(n);
      if (!p) TFAIL("malloc(%zu) failed", n);
      th_fill(p, n);
      void *old = atomic_exchange_explicit(&shared[id][s].p, NULL, memory_order_acq_rel);
      size_t oldn = shared[id][s].n;
      shared[id][s].n = n;
      atomic_store_explicit(&shared[id][s].p, p, memory_order_release);
      if (old) {
        th_verify(old, oldn);
        free(old);
      }
    }
  }
  for (int k = 0; k < K; k++)
    if (slot[k].p) {
      th_verify(slot[k].p, slot[k].n);
      free(slot[k].p);
    }
  return NULL;
}

static void *child_thread(void *arg) {
  for (int i = 0; i < 500; i++) {
    size_t n = 1 + (size_t)i * 37 % 50000;
    void *p = malloc(n);
    if (!p) TFAIL("child thread: malloc(%zu) failed", n);
    th_fill(p, n);
    th_verify(p, n);
    free(p);
  }
  return NULL;
}

static void child_main(int round, void *parent_block, size_t parent_n) {
  th_watchdog(20, "fork child");
  th_rng_t r = th_rng((uint64_t)round);
  void *keep[256];
  size_t kn[256];
  for (int i = 0; i < 256; i++) {
    kn[i] = i % 64 == 0 ? th_logsize(&r, 1 << 20, 12 << 20) : i % 8 == 0 ? th_logsize(&r, 4096, 1 << 20)
                                                                         : th_logsize(&r, 1, 4096);
    keep[i] = malloc(kn[i]);
    if (!keep[i]) TFAIL("child %d: malloc(%zu) failed", round, kn[i]);
    th_fill(keep[i], kn[i]);
  }
  void *big = realloc(malloc(100), 6 << 20);
  if (!big) TFAIL("child %d: realloc to 6 MiB failed", round);
  pthread_t t;
  th_thread(&t, child_thread, NULL);
  th_join(t);
  /* The workers were mid-flight at fork; whatever they had published before is complete. */
  for (int w = 0; w < WORKERS; w++)
    for (int s = 0; s < SHARED; s++) {
      void *p = atomic_load_explicit(&shared[w][s].p, memory_order_acquire);
      if (p) {
        th_verify(p, shared[w][s].n);
        free(p);
      }
    }
  th_verify(parent_block, parent_n);
  free(parent_block);
  for (int i = 0; i < 256; i++) {
    th_verify(keep[i], kn[i]);
    free(keep[i]);
  }
  free(big);
  exit(0);  /* exit, not _exit: atexit handlers and mtheap's destructor run in the child too */
}

int main(void) {
  th_watchdog(100, "test_fork");  /* children inherit the handler: their alarm(20) reports too */
  pthread_t t[WORKERS];
  for (uintptr_t i = 0; i < WORKERS; i++) th_thread(&t[i], worker, (void *)i);
  th_sleep_ms(50);
  enum { ROUNDS = 40 };
  for (int round = 0; round < ROUNDS; round++) {
    size_t pn = 1000 + (size_t)round * 1000;
    void *pb = malloc(pn);
    TCHECK(pb != NULL);
    th_fill(pb, pn);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) TFAIL("fork: %s", strerror(errno));
    if (pid == 0) child_main(round, pb, pn);
    int status;
    while (waitpid(pid, &status, 0) < 0)
      if (errno != EINTR) TFAIL("waitpid: %s", strerror(errno));
    char buf[64];
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      TFAIL("fork round %d: child ended with %s (see its message above; a watchdog message means it "
            "deadlocked after fork)", round,
            th_status_str(status, buf, sizeof buf));
    th_verify(pb, pn);
    free(pb);
  }
  atomic_store(&stop, true);
  for (int i = 0; i < WORKERS; i++) th_join(t[i]);
  for (int w = 0; w < WORKERS; w++)
    for (int s = 0; s < SHARED; s++) {
      void *p = atomic_load(&shared[w][s].p);
      if (p) {
        th_verify(p, shared[w][s].n);
        free(p);
      }
    }
  printf("test_fork: %d forks passed\n", ROUNDS);
  return 0;
}
