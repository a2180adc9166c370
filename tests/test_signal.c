/* malloc and free from a signal handler on the interrupted thread (linked with libmtheap.so).
 *
 * POSIX does not make malloc async-signal-safe, but programs call it from handlers, and glibc's
 * malloc does not deadlock when the handler interrupts code that is not itself inside malloc.
 * Neither may mtheap.  A ticker thread sends SIGUSR1 to a target thread thousands of times; the
 * handler allocates and frees blocks of every size range (small, large, huge) and checks their
 * contents, keeping some alive across signals so they are freed by a later handler or by the
 * thread itself in normal context.  Targets:
 *   1. the main thread, which has used malloc before and spins without calling it;
 *   2. a new thread that has never called malloc, so its heap is created inside the handler,
 *      and that exits afterwards with blocks the handler allocated still live (its heap is
 *      abandoned and adopted like any other);
 *   3. a thread that allocated normally, then spins: handler blocks are freed by main after it
 *      exits (frees into an abandoned heap).
 * A deadlock trips the watchdog; a corrupted block fails th_verify.
 */
#include "testutil.h"

#include <signal.h>

#define RING 64
#define TICKS 3000

static __thread struct { void *p; size_t n; } ring[RING];
static __thread th_rng_t hrng;
static __thread unsigned handled;
static _Atomic bool spin_stop;

static void on_usr1(int sig) {
  (void)sig;
  int saved = errno;
  if (hrng.s == 0) hrng = th_rng((uint64_t)pthread_self());
  for (int j = 0; j < 4; j++) {
    int k = (int)th_below(&hrng, RING);
    if (ring[k].p) {
      th_verify(ring[k].p, ring[k].n);
      free(ring[k].p);
      ring[k].p = NULL;
    } else {
      size_t n = th_mixed_size(&hrng, 1 << 20, 4 << 20, 8 << 20);
      void *p = malloc(n);
      if (!p) TFAIL("malloc(%zu) in a signal handler failed", n);
      th_fill(p, n);
      ring[k].p = p;
      ring[k].n = n;
    }
  }
  handled++;
  errno = saved;
}

/* SIGUSR1 is let in only while a thread spins.  Everywhere else the thread may be inside
 * malloc or free (its own mallocs before it spins, the frees after, its exit), and a handler
 * there would call malloc inside malloc, which no allocator supports.  The stop is not enough to
 * keep signals out: the ticker's last signal is sent before the stop, but the target may read
 * the flag before the kernel interrupts it, so the handler ran in the code after spin() (2 of
 * 70 runs under LD_PRELOAD failed, a block's first word overwritten as when a block is handed
 * out twice).
 * Blocked, a late signal stays pending and is dropped when the thread exits; one sent before
 * the thread spins is handled when it starts to. */
static void usr1_mask(int how) {
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  int e = pthread_sigmask(how, &usr1, NULL);
  if (e) TFAIL("pthread_sigmask: %s", strerror(e));
}

/* Spins without calling malloc until told to stop; returns how many signals it handled. */
static unsigned spin(void) {
  volatile uint64_t x = 1;
  usr1_mask(SIG_UNBLOCK);
  while (!atomic_load_explicit(&spin_stop, memory_order_relaxed)) x = x * 6364136223846793005ull + 1;
  usr1_mask(SIG_BLOCK);
  return handled;
}

static void drain_ring(void) {
  for (int k = 0; k < RING; k++)
    if (ring[k].p) {
      th_verify(ring[k].p, ring[k].n);
      free(ring[k].p);
      ring[k].p = NULL;
    }
}

/* Sends TICKS signals to `target`, a little apart, then stops the spinner. */
static void tick(pthread_t target) {
  for (int i = 0; i < TICKS; i++) {
    int e = pthread_kill(target, SIGUSR1);
    if (e) TFAIL("pthread_kill: %s", strerror(e));
    struct timespec ts = {0, 50 * 1000};
    nanosleep(&ts, NULL);
  }
  atomic_store(&spin_stop, true);
}

static void *ticker(void *arg) {
  tick(*(pthread_t *)arg);
  return NULL;
}

static void *fresh_thread(void *arg) {
  (void)arg;
  unsigned n = spin();
  if (n < TICKS / 10) TFAIL("fresh thread handled only %u of %d signals", n, TICKS);
  return NULL;  /* exits with the handler's live blocks still in its (abandoned) heap */
}

static void *ring_out[RING];
static size_t ring_out_n[RING];

static void *used_thread(void *arg) {
  (void)arg;
  void *mine[100];
  for (int i = 0; i < 100; i++) {
    mine[i] = malloc((size_t)i * 37 + 1);
    th_fill(mine[i], (size_t)i * 37 + 1);
  }
  unsigned n = spin();
  if (n < TICKS / 10) TFAIL("thread handled only %u of %d signals", n, TICKS);
  for (int i = 0; i < 100; i++) {
    th_verify(mine[i], (size_t)i * 37 + 1);
    free(mine[i]);
  }
  for (int k = 0; k < RING; k++) ring_out[k] = ring[k].p, ring_out_n[k] = ring[k].n;
  return NULL;
}

int main(void) {
  usr1_mask(SIG_BLOCK);   /* inherited by every thread: let in only by spin() */
  th_watchdog(120, "test_signal");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGUSR1, &sa, NULL) != 0) TFAIL("sigaction: %s", strerror(errno));
  free(malloc(100));  /* the main thread has a heap before its first signal */

  /* 1: the main thread */
  pthread_t self = pthread_self(), tk;
  atomic_store(&spin_stop, false);
  th_thread(&tk, ticker, &self);
  unsigned n = spin();
  th_join(tk);
  if (n < TICKS / 10) TFAIL("main thread handled only %u of %d signals", n, TICKS);
  printf("main thread: %u signals handled, each with 4 mallocs or frees\n", n);
  drain_ring();

  /* 2: a thread whose first malloc happens in the handler */
  pthread_t t;
  atomic_store(&spin_stop, false);
  th_thread(&t, fresh_thread, NULL);
  tick(t);
  th_join(t);

  /* 3: a thread that allocated normally; its handler blocks are freed here after it exits */
  /* (twice: the second thread adopts a heap left behind by the first ones) */
  for (int round = 0; round < 2; round++) {
    atomic_store(&spin_stop, false);
    th_thread(&t, used_thread, NULL);
    tick(t);
    th_join(t);
    for (int k = 0; k < RING; k++)
      if (ring_out[k]) {
        th_verify(ring_out[k], ring_out_n[k]);
        free(ring_out[k]);
      }
  }
  puts("test_signal: passed");
  return 0;
}
