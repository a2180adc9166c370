/* init.c: the globals, the options from the environment, the real libc functions, and
 * start-up (which may happen inside the first lock call of another library's constructor). */
#include "ps.h"

/* ---- globals ---------------------------------------------------------------------------- */
_Atomic int g_on;
_Atomic int g_init;
int g_mode_hold;
int g_hold_period = 1 << 30;
int g_depth;
int g_attachable;
uint64_t g_deadline_ns;
uint64_t g_duration_ns;
char g_dir[1024];
char g_ctldir[1024];
char g_exec_path[1024];
pid_t g_pid;
uint64_t g_image_start_ns, g_window_start_ns;
uint64_t g_main_run0, g_main_lat0;
_Atomic int g_wwait_total;
_Atomic uint64_t g_dropped;
_Atomic uint32_t g_li_inits;
pthread_key_t g_key;
int g_key_ok;
int g_windows;
_Atomic int g_dumping;
volatile sig_atomic_t g_fatal_sig;
struct ctl *g_ctl;
char g_ctlpath[1100];

struct ev *g_ev;
_Atomic uint32_t *g_ev_index;
uint32_t g_ev_rows, g_ev_slots, g_li_slots;
_Atomic uint32_t g_ev_nrows;
uint64_t g_aggsize, g_bufsize;
struct linfo *g_li;
struct holder *g_ho;
struct thr *g_thr;
_Atomic uint32_t g_nthr;
_Atomic(struct thr *) *g_tid;

struct ps_real real;

/* ---- initialization --------------------------------------------------------------------- */
static void opt_copy(char *dst, size_t cap, const char *src) {
  size_t i = 0;
  for (; src && src[i] && i < cap - 1; i++) dst[i] = src[i];
  dst[i] = 0;
}
static void parse_opts(void) {
  const char *dir = getenv("PLOCKSTAT_DIR");
  const char *o = getenv("PLOCKSTAT_OPTS");
  opt_copy(g_dir, sizeof g_dir, dir);
  opt_copy(g_ctldir, sizeof g_ctldir, getenv("PLOCKSTAT_CTLDIR"));
  g_depth = 0;
  g_mode_hold = 0;
  g_hold_period = 16;
  for (const char *p = o; p && *p;) {
    const char *key = p;
    while (*p && *p != '=' && *p != ',') p++;
    size_t kl = (size_t)(p - key);
    uint64_t val = 0;
    if (*p == '=') { p++; val = parse_u64(&p); }
    while (*p && *p != ',') p++;
    if (*p == ',') p++;
    if (kl == 4 && !memcmp(key, "hold", 4)) g_mode_hold = (int)val;
    else if (kl == 5 && !memcmp(key, "depth", 5)) g_depth = (int)(val > MAX_DEPTH ? MAX_DEPTH : val);
    else if (kl == 10 && !memcmp(key, "holdsample", 10)) g_hold_period = val ? (int)val : 1;
    else if (kl == 8 && !memcmp(key, "duration", 8)) g_duration_ns = val * 1000000ull;  /* ms */
    else if (kl == 10 && !memcmp(key, "attachable", 10)) g_attachable = (int)val;
    else if (kl == 7 && !memcmp(key, "aggsize", 7)) g_aggsize = val;
    else if (kl == 7 && !memcmp(key, "bufsize", 7)) g_bufsize = val;
  }
}

static void resolve_all(void) {
#define R(field, name, ver) real.field = (__typeof__(real.field))resolve(name, ver)
  R(mutex_lock, "pthread_mutex_lock", NULL);
  R(mutex_trylock, "pthread_mutex_trylock", NULL);
  R(mutex_unlock, "pthread_mutex_unlock", NULL);
  R(mutex_timedlock, "pthread_mutex_timedlock", NULL);
  R(mutex_clocklock, "pthread_mutex_clocklock", NULL);
  R(mutex_init, "pthread_mutex_init", NULL);
  R(rw_rdlock, "pthread_rwlock_rdlock", NULL);
  R(rw_tryrdlock, "pthread_rwlock_tryrdlock", NULL);
  R(rw_timedrdlock, "pthread_rwlock_timedrdlock", NULL);
  R(rw_clockrdlock, "pthread_rwlock_clockrdlock", NULL);
  R(rw_wrlock, "pthread_rwlock_wrlock", NULL);
  R(rw_trywrlock, "pthread_rwlock_trywrlock", NULL);
  R(rw_timedwrlock, "pthread_rwlock_timedwrlock", NULL);
  R(rw_clockwrlock, "pthread_rwlock_clockwrlock", NULL);
  R(rw_unlock, "pthread_rwlock_unlock", NULL);
  R(rw_init, "pthread_rwlock_init", NULL);
  R(cond_wait, "pthread_cond_wait", "GLIBC_2.3.2");
  R(cond_timedwait, "pthread_cond_timedwait", "GLIBC_2.3.2");
  R(cond_clockwait, "pthread_cond_clockwait", NULL);
  R(cond_wait_old, "pthread_cond_wait", "GLIBC_2.2.5");
  R(cond_timedwait_old, "pthread_cond_timedwait", "GLIBC_2.2.5");
  R(spin_lock, "pthread_spin_lock", NULL);
  R(spin_trylock, "pthread_spin_trylock", NULL);
  R(spin_unlock, "pthread_spin_unlock", NULL);
  R(spin_init, "pthread_spin_init", NULL);
  R(sem_wait, "sem_wait", NULL);
  R(sem_trywait, "sem_trywait", NULL);
  R(sem_timedwait, "sem_timedwait", NULL);
  R(sem_clockwait, "sem_clockwait", NULL);
  R(sem_init, "sem_init", NULL);
  R(mtx_lock, "mtx_lock", NULL);
  R(mtx_trylock, "mtx_trylock", NULL);
  R(mtx_unlock, "mtx_unlock", NULL);
  R(mtx_timedlock, "mtx_timedlock", NULL);
  R(mtx_init, "mtx_init", NULL);
  R(cnd_wait, "cnd_wait", NULL);
  R(cnd_timedwait, "cnd_timedwait", NULL);
  R(pthread_create, "pthread_create", NULL);
  R(exit_, "_exit", NULL);
  R(Exit_, "_Exit", NULL);
  R(execve, "execve", NULL);
  R(execvpe, "execvpe", NULL);
  R(fexecve, "fexecve", NULL);
  R(execveat, "execveat", NULL);
#undef R
  if (!real.mutex_lock) real.mutex_lock = __pthread_mutex_lock;
  if (!real.mutex_trylock) real.mutex_trylock = __pthread_mutex_trylock;
  if (!real.mutex_unlock) real.mutex_unlock = __pthread_mutex_unlock;
}

void ensure_init(void) {
  int z = 0;
  if (atomic_load_explicit(&g_init, memory_order_acquire) == 2) return;
  if (!atomic_compare_exchange_strong(&g_init, &z, 1)) {
    /* Someone else is initializing (or it is us, re-entered from dlsym): get the real
     * functions without waiting so that the lock being taken can proceed. */
    if (!tls_busy) {
      for (int i = 0; i < 1000000 && atomic_load(&g_init) != 2; i++) __builtin_ia32_pause();
    }
    return;
  }
  int saved = tls_busy;
  tls_busy = 1;
  resolve_all();
  parse_opts();
  g_pid = getpid();
  g_image_start_ns = g_window_start_ns = now_ns();
  read_schedstat(g_pid, &g_main_run0, &g_main_lat0);
  g_thr = map_zero(sizeof(struct thr) * THR_MAX);
  g_tid = map_zero(sizeof(*g_tid) * TID_SLOTS);
  alloc_tables();
  if (pthread_key_create(&g_key, key_dtor) == 0) g_key_ok = 1;
  pthread_atfork(NULL, NULL, atfork_child);
  { void *b[2]; backtrace(b, 2); } /* loads libgcc_s now, not under a lock (li_init, -s) */
  int collect = g_dir[0] && !g_attachable;
  if (collect) {
    if (g_duration_ns) g_deadline_ns = g_image_start_ns + g_duration_ns;
    atomic_store(&g_on, 1);
    fatal_signals_install();
  }
  if (g_attachable && g_ctldir[0]) ctl_create();
  tls_busy = saved;
  atomic_store_explicit(&g_init, 2, memory_order_release);
  /* A single-threaded program gets no helper thread until it makes one of its own (a thread
   * of ours would take glibc off its single-threaded fast paths); -e and -p need it now. */
  if ((collect && g_deadline_ns) || g_ctl) helper_start();
}

__attribute__((constructor(101))) static void plockstat_ctor(void) { ensure_init(); }
__attribute__((destructor)) static void plockstat_dtor(void) {
  dump("exit");
  atomic_store(&g_on, 0);
  if (g_ctlpath[0] && getpid() == g_pid && g_ctl) unlink(g_ctlpath);
}

