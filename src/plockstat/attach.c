/* attach.c: the helper thread (the -e deadline, attach commands from `plockstat -p`) and the
 * shared control page an --attachable process exposes. */
#include "ps.h"

struct ctl {
  uint32_t magic, version;
  volatile uint32_t cmd_seq, ack_seq, cmd, mode_hold, depth, hold_period, state, pad;
  char dir[1024];
};
#define CTL_MAGIC 0x504c4b53u /* "PLKS" */

/* A new -p window: counters start from here. */
void start_window(void) {
  g_window_start_ns = now_ns();
  uint32_t n = atomic_load(&g_nthr);
  if (n > THR_MAX) n = THR_MAX;
  for (uint32_t i = 0; i < n; i++) {
    struct thr *t = &g_thr[i];
    if (!t->inuse) continue;
    t->base_acq = t->acq; t->base_lck = t->lck_ns; t->base_cvw = t->cvw_ns;
    t->base_nblock = t->nblock; t->base_ncvw = t->ncvw;
    if (t->alive) read_schedstat(t->tid, &t->run0, &t->lat0);
    t->hold_cd = g_mode_hold ? g_hold_period : (1 << 30);
  }
  atomic_store(&g_on, 1);
}

/* The helper thread: ends -e windows, answers `plockstat -p`, and writes the data file once a
 * second while something changed, so that a program killed without a chance to write (SIGKILL,
 * the OOM killer) still leaves what it had a second before. */
#define FLUSH_NS 1000000000ull
static _Atomic int g_helper;  /* started in this process */

/* Has anything been counted since the last look?  Sums the threads' own counters, which only
 * their owners write, so the program pays nothing for the question. */
static uint64_t activity(void) {
  uint64_t s = 0;
  uint32_t n = atomic_load(&g_nthr);
  if (n > THR_MAX) n = THR_MAX;
  for (uint32_t i = 0; i < n; i++) {
    volatile struct thr *t = &g_thr[i];
    s += t->acq + t->nblock + t->ncvw + (uint64_t)t->alive;
  }
  return s;
}
static void *helper_main(void *arg) {
  (void)arg;
  tls_busy = 1; /* the helper's own calls are not the program's */
  /* Signals are the program's: a process-directed one must not land here. */
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  uint64_t last_flush = now_ns(), last_gen = 0;
  for (;;) {
    struct timespec ts = { 0, 50 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    uint64_t now = now_ns();
    /* Not conditional on g_on: a slow-path event past the deadline may already have
     * switched collection off. */
    if (g_deadline_ns && now >= g_deadline_ns) {
      atomic_store(&g_on, 0);
      dump("expired");
      g_deadline_ns = 0;
      if (!g_attachable) return NULL;
    }
    if (atomic_load(&g_on) && g_dir[0] && now - last_flush >= FLUSH_NS) {
      uint64_t gen = activity();
      if (gen != last_gen || now - last_flush >= 10 * FLUSH_NS) {
        dump("flush");
        last_gen = gen;
        last_flush = now;
      }
    }
    if (!g_ctl) continue;
    uint32_t seq = g_ctl->cmd_seq;
    if (seq == g_ctl->ack_seq) continue;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (g_ctl->cmd == 1) { /* start */
      size_t i = 0;
      for (; i < sizeof g_dir - 1 && g_ctl->dir[i]; i++) g_dir[i] = g_ctl->dir[i];
      g_dir[i] = 0;
      g_mode_hold = (int)g_ctl->mode_hold;
      g_depth = (int)(g_ctl->depth > MAX_DEPTH ? MAX_DEPTH : g_ctl->depth);
      g_hold_period = g_ctl->hold_period ? (int)g_ctl->hold_period : 16;
      if (g_windows++) alloc_tables(); /* an earlier window's tables: start fresh */
      start_window();
      g_ctl->state = 1;
    } else if (g_ctl->cmd == 2) { /* stop and dump */
      atomic_store(&g_on, 0);
      dump("detach");
      g_ctl->state = 0;
    }
    __atomic_thread_fence(__ATOMIC_RELEASE);
    g_ctl->ack_seq = seq;
  }
  return NULL;
}

void helper_start(void) {
  int z = 0;
  if (!atomic_compare_exchange_strong(&g_helper, &z, 1)) return;
  pthread_t th;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&a, 64 * 1024);
  int b = tls_busy;
  tls_busy = 1;
  if (real.pthread_create(&th, &a, helper_main, NULL) != 0) atomic_store(&g_helper, 0);
  tls_busy = b;
  pthread_attr_destroy(&a);
}

/* fork: the helper thread stayed in the parent. */
void helper_forget(void) { atomic_store(&g_helper, 0); }

void ctl_create(void) {
  const char *d = g_ctldir;
  mkdir(d, 0700);
  size_t n = slen(d);
  if (n + 32 > sizeof g_ctlpath) return;
  memcpy(g_ctlpath, d, n);
  char *q = g_ctlpath + n;
  *q++ = '/';
  char tmp[16]; int k = 0; unsigned v = (unsigned)g_pid;
  do { tmp[k++] = (char)('0' + v % 10); v /= 10; } while (v);
  while (k) *q++ = tmp[--k];
  memcpy(q, ".ctl", 5);
  int fd = open(g_ctlpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  if (ftruncate(fd, 4096) == 0) {
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      g_ctl = p;
      g_ctl->version = 1;
      g_ctl->magic = CTL_MAGIC;
    }
  }
  close(fd);
}

