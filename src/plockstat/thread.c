/* thread.c: one record per thread (counters for --threads, the held-lock stack), found
 * through TLS by the owner and through a tid index by waiters looking for a lock's holder;
 * pthread_create's interposer registers every thread at its start.
 *
 * Invariant: a record is written only by its own thread (others read it without locks and
 * may see a stale value, which only makes a holder's site missing, never wrong memory). */
#include "ps.h"

__thread struct thr *tls_thr __attribute__((tls_model("initial-exec")));
/* Inside our own code (or a helper thread of ours): lock calls pass straight through. */
__thread int tls_busy __attribute__((tls_model("initial-exec")));
/* The thread table was full when this thread came: it stays unregistered. */
__thread int tls_noreg __attribute__((tls_model("initial-exec")));

struct thr *thr_by_tid(int tid) {
  if (!g_tid || tid <= 0) return NULL;
  uint32_t i = (uint32_t)tid & (TID_SLOTS - 1);
  for (int probe = 0; probe < 64; probe++, i = (i + 1) & (TID_SLOTS - 1)) {
    struct thr *t = atomic_load_explicit(&g_tid[i], memory_order_acquire);
    if (!t) return NULL;
    if (t->tid == tid) return t;
  }
  return NULL;
}
void thr_index(struct thr *t) {
  uint32_t i = (uint32_t)t->tid & (TID_SLOTS - 1);
  for (int probe = 0; probe < 64; probe++, i = (i + 1) & (TID_SLOTS - 1)) {
    struct thr *o = atomic_load_explicit(&g_tid[i], memory_order_acquire);
    /* A recycled tid belongs to a dead thread: the newest registration wins. */
    if (o == NULL || o->tid == t->tid) {
      if (atomic_compare_exchange_strong(&g_tid[i], &o, t)) return;
    }
  }
}

/* ---- per-thread records ----------------------------------------------------------------- */
struct thr *thr_alloc(void) {
  if (!g_thr) return NULL;
  uint32_t idx = atomic_fetch_add(&g_nthr, 1);
  if (idx >= THR_MAX) return NULL;
  struct thr *t = &g_thr[idx];
  t->inuse = 1;
  t->hold_cd = g_mode_hold ? g_hold_period : (1 << 30);
  return t;
}
/* One window per thread for every column of --threads: from the thread's start (or the
 * image's, for the main thread; or the -p window's) to its end.  fresh: the thread starts now,
 * in our trampoline, with no cpu time yet.  Otherwise it is registered late (at its first lock
 * call): the main thread counts from the image's start, whose cpu time init.c noted (an exec'd
 * image must not inherit the previous one's); any other thread from now, its cpu time so far
 * set aside. */
void thr_start(struct thr *t, int fresh) {
  t->tid = my_tid();
  t->alive = 1;
  t->start_ns = now_ns();
  t->run0 = t->lat0 = 0;
  if (g_window_start_ns > g_image_start_ns) {
    /* Attached later: the thread's earlier cpu time is not in the window. */
    read_schedstat(t->tid, &t->run0, &t->lat0);
  } else if (t->tid == g_pid) {
    t->start_ns = g_image_start_ns;
    t->run0 = g_main_run0;
    t->lat0 = g_main_lat0;
  } else if (!fresh) {
    read_schedstat(t->tid, &t->run0, &t->lat0);
  }
  thr_index(t);
  if (g_key_ok) pthread_setspecific(g_key, t);
}
static void thr_finish(struct thr *t) {
  if (!t->alive) return;
  read_schedstat(t->tid, &t->run_end, &t->lat_end);
  read_comm(t->tid, t->name);
  t->end_ns = now_ns();
  t->alive = 0;
}
void key_dtor(void *p) {
  struct thr *t = p;
  tls_busy = 1;
  tls_thr = NULL;
  if (t) thr_finish(t);
}
NOINLINE struct thr *thr_register(void) {
  if (tls_noreg || tls_busy) return NULL;
  ensure_init();
  if (atomic_load(&g_init) != 2) return NULL;
  tls_busy = 1;
  struct thr *t = thr_alloc();
  if (!t) { tls_noreg = 1; tls_busy = 0; return NULL; }
  thr_start(t, 0);
  tls_busy = 0;
  tls_thr = t;
  return t;
}

/* ---- pthread_create --------------------------------------------------------------------- */
static void *thread_trampoline(void *p) {
  struct thr *t = p;
  tls_busy = 1;
  thr_start(t, 1);
  tls_busy = 0;
  tls_thr = t;
  return t->fn(t->arg);
}
/* Registering in the trampoline gives every thread an exact start time and a row in --threads
 * even if it never touches a lock; the record doubles as the trampoline's argument, so no
 * allocation is needed. */
EXPORT int ps_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
  if (!real.pthread_create) ensure_init();
  struct thr *t = NULL;
  if (!tls_busy && atomic_load(&g_init) == 2 && atomic_load(&g_on)) {
    tls_busy = 1;
    t = thr_alloc();
    tls_busy = 0;
  }
  if (!t) return real.pthread_create(th, attr, fn, arg);
  t->fn = fn;
  t->arg = arg;
  int r = real.pthread_create(th, attr, thread_trampoline, t);
  if (r != 0) t->inuse = 0;
  else if (g_dir[0]) helper_start(); /* threads now: write the data once a second */
  return r;
}


V2(ps_pthread_create, pthread_create, "GLIBC_2.2.5", "GLIBC_2.34");
