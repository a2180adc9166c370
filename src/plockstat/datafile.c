/* datafile.c: the data file: a text header, one line per thread, event, lock and holder,
 * then a copy of /proc/self/maps.  Written with write(2) from a static buffer, so it can run
 * from a signal handler; written to <pid>.<start>.data.tmp and renamed, so a reader never sees
 * half a file. */
#include "ps.h"

static struct {
  int fd;
  size_t n;
  char b[1 << 16];
} W;
static void w_flush(void) {
  size_t off = 0;
  while (off < W.n) {
    ssize_t k = write(W.fd, W.b + off, W.n - off);
    if (k < 0) { if (errno == EINTR) continue; break; }
    off += (size_t)k;
  }
  W.n = 0;
}
static void w_str(const char *s) {
  while (*s) {
    if (W.n == sizeof W.b) w_flush();
    W.b[W.n++] = *s++;
  }
}
static void w_u64(uint64_t v) {
  char t[24]; int k = 0;
  do { t[k++] = (char)('0' + v % 10); v /= 10; } while (v);
  char o[24]; int j = 0;
  while (k) o[j++] = t[--k];
  o[j] = 0;
  w_str(o);
}
static void w_hex(uint64_t v) {
  char t[24]; int k = 0;
  do { t[k++] = "0123456789abcdef"[v & 15]; v >>= 4; } while (v);
  char o[24]; int j = 0;
  o[j++] = '0'; o[j++] = 'x';
  while (k) o[j++] = t[--k];
  o[j] = 0;
  w_str(o);
}
static void w_file(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  for (;;) {
    if (W.n == sizeof W.b) w_flush();
    ssize_t k = read(fd, W.b + W.n, sizeof W.b - W.n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    W.n += (size_t)k;
  }
  close(fd);
}

static _Atomic int g_dump_flush; /* the dump in progress is the periodic one */

/* reason: exit, _exit, exec, signal, expired, detach, or flush (the periodic write). */
void dump(const char *reason) {
  if (atomic_load(&g_init) != 2 || !g_dir[0] || !g_ev) return;
  if (getpid() != g_pid) return;
  int me = my_tid();
  int z = 0;
  int flush = reason[0] == 'f';
  if (!atomic_compare_exchange_strong(&g_dumping, &z, me)) {
    if (z == me || flush) return; /* a signal arrived while this thread was dumping */
    /* Another thread is dumping (e.g. _exit racing the -e deadline): let it finish so that
     * the process does not vanish under it.  If that was the periodic write, the final state
     * is not in it yet: write again. */
    int was_flush = atomic_load(&g_dump_flush);
    for (int i = 0; i < 400 && atomic_load(&g_dumping); i++) {
      struct timespec ts = { 0, 5 * 1000 * 1000 };
      nanosleep(&ts, NULL);
    }
    z = 0;
    if (!was_flush || !atomic_compare_exchange_strong(&g_dumping, &z, me)) return;
  }
  atomic_store(&g_dump_flush, flush);
  int saved_busy = tls_busy;
  struct thr *saved_thr = tls_thr;
  tls_busy = 1;
  tls_thr = NULL;
  int saved_errno = errno;

  char path[1200], tmp[1210];
  size_t n = slen(g_dir);
  if (n + 64 < sizeof path) {
    memcpy(path, g_dir, n);
    W.fd = -1;
    W.n = 0;
    /* name: <dir>/<pid>.<image start ns>.data — exec keeps the pid, so the start time tells the
     * images apart, and a later dump of the same image replaces the earlier one. */
    char *q = path + n;
    *q++ = '/';
    char num[24]; int k = 0; uint64_t v = (uint64_t)g_pid;
    do { num[k++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (k) *q++ = num[--k];
    *q++ = '.';
    v = g_image_start_ns;
    do { num[k++] = (char)('0' + v % 10); v /= 10; } while (v);
    while (k) *q++ = num[--k];
    memcpy(q, ".data", 6);
    memcpy(tmp, path, (size_t)(q - path));
    memcpy(tmp + (q - path), ".tmp", 5);
    /* The directory may be writable by others (plockstat run as root for a program that
     * drops privileges makes it 01733): never follow or reuse what someone else put there. */
    unlink(tmp);
    W.fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  } else {
    W.fd = -1;
  }
  if (W.fd >= 0) {
    uint64_t tend = now_ns();
    w_str("plockstat-data 1\npid "); w_u64((uint64_t)g_pid);
    w_str("\nppid "); w_u64((uint64_t)getppid());
    w_str("\nreason "); w_str(reason);
    if (g_fatal_sig) { w_str("\nsignal "); w_u64((uint64_t)g_fatal_sig); }
    if (g_exec_path[0]) { w_str("\nexec_path "); w_str(g_exec_path); }
    w_str("\nimage_start_ns "); w_u64(g_image_start_ns);
    w_str("\nwindow_start_ns "); w_u64(g_window_start_ns);
    w_str("\nend_ns "); w_u64(tend);
    w_str("\nhold "); w_u64((uint64_t)g_mode_hold);
    w_str("\nholdsample "); w_u64((uint64_t)g_hold_period);
    w_str("\ndepth "); w_u64((uint64_t)g_depth);
    w_str("\ndropped "); w_u64(atomic_load(&g_dropped));
    w_str("\nevrows "); w_u64(g_ev_rows);
    w_str("\nevsize "); w_u64(sizeof(struct ev));
    char exe[1024];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (el > 0) { exe[el] = 0; w_str("\nexe "); w_str(exe); }
    /* argv[0] too: the name the user ran (Debian's redis-server is a link to redis-check-rdb,
     * which is all /proc/self/exe says) */
    int al = read_small("/proc/self/cmdline", exe, sizeof exe);
    if (al > 0) {
      for (int i = 0; i < al && exe[i]; i++) if (exe[i] == '\n') exe[i] = '?';
      w_str("\nargv0 "); w_str(exe);
    }
    w_str("\n");
    /* threads: T tid alive start end run lat lck cvw acq nblock ncvw name */
    uint32_t nt = atomic_load(&g_nthr);
    if (nt > THR_MAX) nt = THR_MAX;
    for (uint32_t i = 0; i < nt; i++) {
      struct thr *t = &g_thr[i];
      if (!t->inuse || !t->tid) continue;
      uint64_t run, lat, end;
      char name[16];
      memcpy(name, t->name, sizeof name);
      if (t->alive) {
        read_schedstat(t->tid, &run, &lat);
        read_comm(t->tid, name);
        end = tend;
      } else {
        run = t->run_end; lat = t->lat_end; end = t->end_ns;
      }
      uint64_t st = t->start_ns > g_window_start_ns ? t->start_ns : g_window_start_ns;
      if (end < st) continue; /* ended before the window */
      w_str("T "); w_u64((uint64_t)t->tid);
      w_str(" "); w_u64((uint64_t)t->alive);
      w_str(" "); w_u64(st);
      w_str(" "); w_u64(end);
      w_str(" "); w_u64(run > t->run0 ? run - t->run0 : 0);
      w_str(" "); w_u64(lat > t->lat0 ? lat - t->lat0 : 0);
      w_str(" "); w_u64(t->lck_ns - t->base_lck);
      w_str(" "); w_u64(t->cvw_ns - t->base_cvw);
      w_str(" "); w_u64(t->acq - t->base_acq);
      w_str(" "); w_u64(t->nblock - t->base_nblock);
      w_str(" "); w_u64(t->ncvw - t->base_ncvw);
      w_str(" "); w_str(name[0] ? name : "-");
      w_str("\n");
    }
    /* waits in progress: W tid kind lock mutex waited_ns pc owner owner_pc stack */
    for (uint32_t i = 0; i < nt; i++) {
      struct thr *t = &g_thr[i];
      uintptr_t lock = t->w_lock;
      if (!t->inuse || !t->alive || !lock) continue;
      uint64_t t0 = t->w_t0;
      w_str("W "); w_u64((uint64_t)t->tid);
      w_str(" "); w_u64((uint64_t)t->w_kind);
      w_str(" "); w_hex(lock);
      w_str(" "); w_hex(t->w_mutex);
      w_str(" "); w_u64(tend > t0 ? tend - t0 : 0);
      w_str(" "); w_hex(t->w_pc);
      w_str(" "); w_u64((uint64_t)(t->w_owner > 0 ? t->w_owner : 0));
      w_str(" "); w_hex(t->w_owner_pc);
      w_str(" ");
      int d = t->w_depth < 0 ? 0 : t->w_depth > MAX_DEPTH ? MAX_DEPTH : t->w_depth;
      if (!d) w_hex(t->w_pc);
      for (int k = 0; k < d; k++) { if (k) w_str(","); w_hex(t->w_stk[k]); }
      w_str("\n");
    }
    /* events: E kind flags ltype lock count sum max nbuckets:b=c,... stack */
    uint32_t nrows = atomic_load(&g_ev_nrows);
    if (nrows > g_ev_rows) nrows = g_ev_rows;
    for (uint32_t i = 0; i < nrows; i++) {
      struct ev *e = &g_ev[i];
      if (!atomic_load(&e->count)) continue; /* unpublished, or being filled right now */
      w_str("E "); w_u64(e->kind);
      w_str(" "); w_u64(e->flags);
      w_str(" "); w_u64(e->ltype);
      w_str(" "); w_hex(e->lock);
      w_str(" "); w_u64(atomic_load(&e->count));
      w_str(" "); w_u64(atomic_load(&e->sum));
      w_str(" "); w_u64(atomic_load(&e->max));
      w_str(" ");
      int first = 1;
      for (int b = 0; b < HIST_BUCKETS; b++) {
        uint64_t c = atomic_load(&e->hist[b]);
        if (!c) continue;
        if (!first) w_str(",");
        first = 0;
        w_u64((uint64_t)b); w_str(":"); w_u64(c);
      }
      if (first) w_str("-");
      w_str(" ");
      for (int d = 0; d < e->depth; d++) {
        if (d) w_str(",");
        w_hex(e->stack[d]);
      }
      w_str("\n");
    }
    /* locks: L lock ltype subkind init_pc first_pc reads_while_wwait wwait_busy_ns init_caller
     *        ordinal partner */
    for (uint32_t i = 0; i < g_li_slots; i++) {
      struct linfo *l = &g_li[i];
      uintptr_t k = atomic_load(&l->key);
      if (!k || !atomic_load(&l->used)) continue;
      w_str("L "); w_hex(k);
      w_str(" "); w_u64(l->ltype);
      w_str(" "); w_u64((uint64_t)(int64_t)l->subkind);
      w_str(" "); w_hex(l->init_pc);
      w_str(" "); w_hex(atomic_load(&l->first_pc));
      w_str(" "); w_u64(atomic_load(&l->reads_while_wwait));
      w_str(" "); w_u64(atomic_load(&l->wwait_busy_ns));
      w_str(" "); w_hex(l->init_caller);
      w_str(" "); w_u64(l->ordinal);
      w_str(" "); w_hex(atomic_load(&l->partner));
      w_str("\n");
    }
    /* holders: H lock tid pc count sum */
    for (uint32_t i = 0; i < HO_SLOTS; i++) {
      struct holder *h = &g_ho[i];
      if (atomic_load(&h->state) != 2) continue;
      w_str("H "); w_hex(h->lock);
      w_str(" "); w_u64((uint64_t)h->tid);
      w_str(" "); w_hex(h->pc);
      w_str(" "); w_u64(atomic_load(&h->count));
      w_str(" "); w_u64(atomic_load(&h->sum));
      w_str("\n");
    }
    w_str("maps\n");
    w_file("/proc/self/maps");
    w_flush();
    close(W.fd);
    rename(tmp, path);
  }
  errno = saved_errno;
  tls_thr = saved_thr;
  tls_busy = saved_busy;
  atomic_store(&g_dumping, 0);
}

