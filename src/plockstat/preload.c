/* libplockstat.so: the in-process half of plockstat.
 *
 * Loaded with LD_PRELOAD, it interposes every public way a Linux program takes a lock, counts
 * the uncontended case in per-thread records, and times only the slow path.  At exit (and at
 * _exit, exec, fork child exit, the -e deadline, or a detach) it writes one text file with the
 * aggregated tables plus a copy of /proc/self/maps; the plockstat CLI symbolizes it offline.
 *
 * Rules this file lives by, because it runs inside arbitrary programs:
 *  - no malloc and no stdio anywhere (the program's heap may be mtheap, may be corrupt, or we may
 *    be inside a signal handler); all memory comes from mmap;
 *  - no lock of our own: tables are open-addressed with CAS-claimed slots and atomic counters;
 *  - the uncontended path is: TLS load, trylock, two TLS stores, return.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h> /* rename() only: no stdio streams are used */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/single_threaded.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define NOINLINE __attribute__((noinline))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RA ((uintptr_t)__builtin_return_address(0))

/* Event categories; the numbers are part of the data-file format (see plockstat.py). */
enum {
  EV_MUTEX_BLOCK, EV_MUTEX_HOLD, EV_RD_BLOCK, EV_WR_BLOCK, EV_RD_HOLD, EV_WR_HOLD,
  EV_COND_WAIT, EV_TRY_FAIL, EV_SPIN_BLOCK, EV_SEM_WAIT, EV_OWNER_DEAD, EV_NKINDS
};
#define F_TIMEDOUT 1u
enum { LT_NONE, LT_MUTEX, LT_RWLOCK, LT_COND, LT_SPIN, LT_SEM, LT_MTX, LT_CND };
enum { HK_MUTEX = 1, HK_RD, HK_WR };

#define HIST_BUCKETS 48
#define MAX_DEPTH 32
#define HELD_MAX 16
#define EV_SLOTS (1u << 14)
#define LI_SLOTS (1u << 16)
#define HO_SLOTS (1u << 13)
#define THR_MAX (1u << 15)
#define TID_SLOTS (1u << 16)

struct ev {
  _Atomic uint32_t state; /* 0 free, 1 being filled, 2 ready */
  uint8_t kind, flags, depth, ltype;
  uint64_t hash;
  uintptr_t lock;
  _Atomic uint64_t count, sum, max;
  _Atomic uint64_t hist[HIST_BUCKETS];
  uintptr_t stack[MAX_DEPTH];
};

struct linfo {
  _Atomic uintptr_t key;
  uint8_t ltype;
  _Atomic uint8_t used;
  int subkind;                       /* mutex __kind / rwlock __flags when first seen */
  uintptr_t init_pc;
  _Atomic uintptr_t first_pc;
  _Atomic int32_t writers_waiting;
  _Atomic uint64_t wwait_start, wwait_busy_ns, reads_while_wwait, owner_dead;
};

struct holder {
  _Atomic uint32_t state;
  int tid;
  uint64_t hash;
  uintptr_t lock, pc;
  _Atomic uint64_t count, sum;
};

struct held { uintptr_t lock, pc; uint64_t t0; int kind; };

struct thr {
  /* Hot: touched on every lock/unlock by the owning thread only. */
  uint64_t acq;
  int hold_cd, nheld;
  struct held held[HELD_MAX];
  /* The lock this thread released last and where it had taken it: a waiter that finds the
   * lock busy often looks for the holder's site just after the holder let go (a critical
   * section of one malloc is shorter than that look). */
  uintptr_t rel_lock, rel_pc;
  /* Slow path and bookkeeping. */
  uint64_t lck_ns, cvw_ns, nblock, ncvw;
  uint64_t base_acq, base_lck, base_cvw, base_nblock, base_ncvw;
  uint64_t start_ns, end_ns, run0, lat0, run_end, lat_end;
  int tid, alive, inuse;
  char name[16];
  void *(*fn)(void *);
  void *arg;
};

/* ---- globals ---------------------------------------------------------------------------- */
static __thread struct thr *tls_thr __attribute__((tls_model("initial-exec")));
static __thread int tls_busy __attribute__((tls_model("initial-exec")));
static __thread int tls_noreg __attribute__((tls_model("initial-exec")));

static _Atomic int g_on;             /* collecting now */
static _Atomic int g_init;           /* 0 none, 1 running, 2 done */
static int g_mode_hold;              /* -H or -A */
static int g_hold_period = 1 << 30;
static int g_depth;                  /* -s depth (0: caller only) */
static int g_attachable;
static uint64_t g_deadline_ns;       /* -e: 0 = none */
static uint64_t g_duration_ns;
static char g_dir[1024];
static char g_ctldir[1024];
static pid_t g_pid;
static uint64_t g_image_start_ns, g_window_start_ns;
static _Atomic int g_wwait_total;    /* writers currently waiting on any rwlock */
static _Atomic uint64_t g_dropped;
static _Atomic uint32_t g_li_inits;  /* init-time lock records, capped to leave room for events */
static pthread_key_t g_key;
static int g_key_ok;
static int g_sig_installed;
static int g_windows;          /* attach windows started so far */
static _Atomic int g_dumping;  /* tid of the thread writing the data file, or 0 */
struct ctl;
static struct ctl *g_ctl;
static char g_ctlpath[1100];

static struct ev *g_ev;
static struct linfo *g_li;
static struct holder *g_ho;
static struct thr *g_thr;
static _Atomic uint32_t g_nthr;
static _Atomic(struct thr *) *g_tid;  /* tid hash -> thread record */

/* Real functions. */
static struct {
  int (*mutex_lock)(pthread_mutex_t *), (*mutex_trylock)(pthread_mutex_t *),
      (*mutex_unlock)(pthread_mutex_t *),
      (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *),
      (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *),
      (*mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
  int (*rw_rdlock)(pthread_rwlock_t *), (*rw_tryrdlock)(pthread_rwlock_t *),
      (*rw_timedrdlock)(pthread_rwlock_t *, const struct timespec *),
      (*rw_clockrdlock)(pthread_rwlock_t *, clockid_t, const struct timespec *),
      (*rw_wrlock)(pthread_rwlock_t *), (*rw_trywrlock)(pthread_rwlock_t *),
      (*rw_timedwrlock)(pthread_rwlock_t *, const struct timespec *),
      (*rw_clockwrlock)(pthread_rwlock_t *, clockid_t, const struct timespec *),
      (*rw_unlock)(pthread_rwlock_t *),
      (*rw_init)(pthread_rwlock_t *, const pthread_rwlockattr_t *);
  int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *),
      (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *),
      (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *),
      (*cond_wait_old)(pthread_cond_t *, pthread_mutex_t *),
      (*cond_timedwait_old)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
  int (*spin_lock)(pthread_spinlock_t *), (*spin_trylock)(pthread_spinlock_t *),
      (*spin_unlock)(pthread_spinlock_t *), (*spin_init)(pthread_spinlock_t *, int);
  int (*sem_wait)(sem_t *), (*sem_trywait)(sem_t *),
      (*sem_timedwait)(sem_t *, const struct timespec *),
      (*sem_clockwait)(sem_t *, clockid_t, const struct timespec *),
      (*sem_init)(sem_t *, int, unsigned);
  int (*mtx_lock)(mtx_t *), (*mtx_trylock)(mtx_t *), (*mtx_unlock)(mtx_t *),
      (*mtx_timedlock)(mtx_t *__restrict, const struct timespec *__restrict),
      (*mtx_init)(mtx_t *, int);
  int (*cnd_wait)(cnd_t *, mtx_t *), (*cnd_timedwait)(cnd_t *, mtx_t *, const struct timespec *);
  int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  void (*exit_)(int) __attribute__((noreturn));
  void (*Exit_)(int) __attribute__((noreturn));
  int (*execve)(const char *, char *const[], char *const[]);
  int (*execvpe)(const char *, char *const[], char *const[]);
  int (*fexecve)(int, char *const[], char *const[]);
  int (*execveat)(int, const char *, char *const[], char *const[], int);
} real;

/* libc's own aliases: used if a lock is taken while the dlsym-resolved pointers are not there
 * yet (another library's constructor, or dlsym itself allocating through a malloc that locks). */
extern int __pthread_mutex_lock(pthread_mutex_t *);
extern int __pthread_mutex_trylock(pthread_mutex_t *);
extern int __pthread_mutex_unlock(pthread_mutex_t *);
__asm__(".symver __pthread_mutex_lock,__pthread_mutex_lock@GLIBC_2.2.5");
__asm__(".symver __pthread_mutex_trylock,__pthread_mutex_trylock@GLIBC_2.2.5");
__asm__(".symver __pthread_mutex_unlock,__pthread_mutex_unlock@GLIBC_2.2.5");

static void ensure_init(void);
static void dump(const char *reason);

/* ---- small helpers ---------------------------------------------------------------------- */
static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static inline int my_tid(void) { return (int)syscall(SYS_gettid); }
static void *map_zero(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}
static inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}
static inline unsigned hist_bucket(uint64_t ns) {
  unsigned b = 63u - (unsigned)__builtin_clzll(ns | 1);
  return b >= HIST_BUCKETS ? HIST_BUCKETS - 1 : b;
}
static void *resolve(const char *name, const char *ver) {
  void *p = ver ? dlvsym(RTLD_NEXT, name, ver) : NULL;
  if (!p) p = dlsym(RTLD_NEXT, name);
  return p;
}
static size_t slen(const char *s) { size_t n = 0; while (s[n]) n++; return n; }
static int read_small(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n < 0) return -1;
  buf[n] = 0;
  return (int)n;
}
static uint64_t parse_u64(const char **pp) {
  const char *p = *pp;
  uint64_t v = 0;
  while (*p == ' ') p++;
  while (*p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
  *pp = p;
  return v;
}
/* schedstat: time on cpu and time waiting on a runqueue, in ns. */
static void read_schedstat(int tid, uint64_t *run, uint64_t *lat) {
  char path[64], buf[128];
  char *q = path;
  const char *pre = "/proc/self/task/";
  while (*pre) *q++ = *pre++;
  char tmp[16]; int n = 0; unsigned v = (unsigned)tid;
  do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
  while (n) *q++ = tmp[--n];
  const char *suf = "/schedstat";
  while (*suf) *q++ = *suf++;
  *q = 0;
  *run = *lat = 0;
  if (read_small(path, buf, sizeof buf) <= 0) return;
  const char *p = buf;
  *run = parse_u64(&p);
  *lat = parse_u64(&p);
}
static void read_comm(int tid, char out[16]) {
  char path[64], buf[32];
  char *q = path;
  const char *pre = "/proc/self/task/";
  while (*pre) *q++ = *pre++;
  char tmp[16]; int n = 0; unsigned v = (unsigned)tid;
  do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
  while (n) *q++ = tmp[--n];
  const char *suf = "/comm";
  while (*suf) *q++ = *suf++;
  *q = 0;
  if (read_small(path, buf, sizeof buf) <= 0) return;
  int i = 0;
  for (; i < 15 && buf[i] && buf[i] != '\n'; i++) out[i] = buf[i] == ' ' ? '_' : buf[i];
  out[i] = 0;
}

/* ---- tables ----------------------------------------------------------------------------- */
static struct ev *ev_get(int kind, unsigned flags, uintptr_t lock, int ltype,
                         const uintptr_t *stk, int depth) {
  struct ev *tab = g_ev;
  if (!tab) return NULL;
  uint64_t h = mix(mix(mix(0, lock), (uint64_t)kind << 8 | flags), (uint64_t)depth);
  for (int i = 0; i < depth; i++) h = mix(h, stk[i]);
  h |= 1;
  uint32_t i = (uint32_t)h & (EV_SLOTS - 1);
  for (int probe = 0; probe < 256; probe++, i = (i + 1) & (EV_SLOTS - 1)) {
    struct ev *e = &tab[i];
    uint32_t s = atomic_load_explicit(&e->state, memory_order_acquire);
    if (s == 0) {
      uint32_t z = 0;
      if (atomic_compare_exchange_strong(&e->state, &z, 1)) {
        e->hash = h; e->lock = lock; e->kind = (uint8_t)kind; e->flags = (uint8_t)flags;
        e->ltype = (uint8_t)ltype; e->depth = (uint8_t)depth;
        for (int k = 0; k < depth; k++) e->stack[k] = stk[k];
        atomic_store_explicit(&e->state, 2, memory_order_release);
        return e;
      }
      s = z;
    }
    /* Bounded: a signal handler on the filling thread must not spin forever. */
    for (int spin = 0; s == 1 && spin < 100000; spin++)
      s = atomic_load_explicit(&e->state, memory_order_acquire);
    if (s == 2 && e->hash == h && e->lock == lock && e->kind == kind && e->flags == flags) return e;
  }
  atomic_fetch_add(&g_dropped, 1);
  return NULL;
}

static struct linfo *li_get(uintptr_t lock, int create);
/* Record where a lock was initialized, to name it if it is not a global.  Programs that make
 * millions of short-lived locks must not fill the table that the contended ones need. */
static void li_init(const void *lock, int ltype, uintptr_t pc) {
  if (tls_busy || !g_li) return;
  if (atomic_load_explicit(&g_li_inits, memory_order_relaxed) > LI_SLOTS / 2) return;
  struct linfo *l = li_get((uintptr_t)lock, 1);
  if (!l) return;
  if (!l->init_pc) atomic_fetch_add_explicit(&g_li_inits, 1, memory_order_relaxed);
  l->init_pc = pc;
  l->ltype = (uint8_t)ltype;
}

static struct linfo *li_get(uintptr_t lock, int create) {
  struct linfo *tab = g_li;
  if (!tab || !lock) return NULL;
  uint32_t i = (uint32_t)(mix(0, lock)) & (LI_SLOTS - 1);
  for (int probe = 0; probe < 512; probe++, i = (i + 1) & (LI_SLOTS - 1)) {
    struct linfo *l = &tab[i];
    uintptr_t k = atomic_load_explicit(&l->key, memory_order_acquire);
    if (k == lock) return l;
    if (k == 0) {
      if (!create) return NULL;
      uintptr_t z = 0;
      if (atomic_compare_exchange_strong(&l->key, &z, lock)) return l;
      if (z == lock) return l;
    }
  }
  return NULL;
}

static void holder_add(uintptr_t lock, int tid, uintptr_t pc, uint64_t ns) {
  struct holder *tab = g_ho;
  if (!tab) return;
  uint64_t h = mix(mix(mix(0, lock), pc), (uint64_t)tid) | 1;
  uint32_t i = (uint32_t)h & (HO_SLOTS - 1);
  for (int probe = 0; probe < 128; probe++, i = (i + 1) & (HO_SLOTS - 1)) {
    struct holder *e = &tab[i];
    uint32_t s = atomic_load_explicit(&e->state, memory_order_acquire);
    if (s == 0) {
      uint32_t z = 0;
      if (atomic_compare_exchange_strong(&e->state, &z, 1)) {
        e->hash = h; e->lock = lock; e->pc = pc; e->tid = tid;
        atomic_store_explicit(&e->state, 2, memory_order_release);
        s = 2;
      } else {
        s = z;
      }
    }
    for (int spin = 0; s == 1 && spin < 100000; spin++)
      s = atomic_load_explicit(&e->state, memory_order_acquire);
    if (s == 2 && e->hash == h && e->lock == lock && e->pc == pc && e->tid == tid) {
      atomic_fetch_add_explicit(&e->count, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&e->sum, ns, memory_order_relaxed);
      return;
    }
  }
}

static struct thr *thr_by_tid(int tid) {
  if (!g_tid || tid <= 0) return NULL;
  uint32_t i = (uint32_t)tid & (TID_SLOTS - 1);
  for (int probe = 0; probe < 64; probe++, i = (i + 1) & (TID_SLOTS - 1)) {
    struct thr *t = atomic_load_explicit(&g_tid[i], memory_order_acquire);
    if (!t) return NULL;
    if (t->tid == tid) return t;
  }
  return NULL;
}
static void thr_index(struct thr *t) {
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
static struct thr *thr_alloc(void) {
  if (!g_thr) return NULL;
  uint32_t idx = atomic_fetch_add(&g_nthr, 1);
  if (idx >= THR_MAX) return NULL;
  struct thr *t = &g_thr[idx];
  t->inuse = 1;
  t->hold_cd = g_mode_hold ? g_hold_period : (1 << 30);
  return t;
}
static void thr_start(struct thr *t) {
  t->tid = my_tid();
  t->alive = 1;
  t->start_ns = now_ns();
  if (g_window_start_ns > g_image_start_ns) {
    /* Attached later: the thread's earlier cpu time is not in the window. */
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
static void key_dtor(void *p) {
  struct thr *t = p;
  tls_busy = 1;
  tls_thr = NULL;
  if (t) thr_finish(t);
}
static NOINLINE struct thr *thr_register(void) {
  if (tls_noreg || tls_busy) return NULL;
  ensure_init();
  if (atomic_load(&g_init) != 2) return NULL;
  tls_busy = 1;
  struct thr *t = thr_alloc();
  if (!t) { tls_noreg = 1; tls_busy = 0; return NULL; }
  thr_start(t);
  tls_busy = 0;
  tls_thr = t;
  return t;
}

/* Entering our own slow-path code: nested lock calls (backtrace's unwinder, dlsym) must pass
 * straight through, which the NULL TLS pointer makes the fast path do. */
static inline void enter_tool(void) { tls_busy = 1; tls_thr = NULL; }
static inline void leave_tool(struct thr *t) { tls_busy = 0; tls_thr = t; }

static int capture_stack(uintptr_t *out, uintptr_t ra) {
  if (g_depth <= 0) { out[0] = ra; return 1; }
  void *buf[MAX_DEPTH + 8];
  int want = g_depth + 6;
  if (want > MAX_DEPTH + 8) want = MAX_DEPTH + 8;
  int n = backtrace(buf, want);
  int start = -1;
  for (int i = 0; i < n; i++)
    if ((uintptr_t)buf[i] == ra) { start = i; break; }
  if (start < 0) { out[0] = ra; return 1; }
  int d = 0;
  for (int i = start; i < n && d < g_depth && d < MAX_DEPTH; i++) out[d++] = (uintptr_t)buf[i];
  return d;
}

static void check_deadline(uint64_t t) {
  if (g_deadline_ns && t >= g_deadline_ns) atomic_store(&g_on, 0);
}

static void record(struct thr *t, int kind, unsigned flags, const void *lockp, int ltype,
                   uintptr_t ra, uint64_t ns) {
  uintptr_t lock = (uintptr_t)lockp;
  enter_tool();
  uintptr_t stk[MAX_DEPTH];
  int d = capture_stack(stk, ra);
  struct ev *e = ev_get(kind, flags, lock, ltype, stk, d);
  if (e) {
    atomic_fetch_add_explicit(&e->count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&e->sum, ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&e->hist[hist_bucket(ns)], 1, memory_order_relaxed);
    uint64_t m = atomic_load_explicit(&e->max, memory_order_relaxed);
    while (ns > m && !atomic_compare_exchange_weak(&e->max, &m, ns)) {}
  }
  struct linfo *l = li_get(lock, 1);
  if (l) {
    if (!l->ltype) l->ltype = (uint8_t)ltype;
    uintptr_t z = 0;
    atomic_compare_exchange_strong(&l->first_pc, &z, ra);
    if (!atomic_load_explicit(&l->used, memory_order_relaxed)) {
      if (ltype == LT_MUTEX || ltype == LT_MTX) l->subkind = ((pthread_mutex_t *)lockp)->__data.__kind;
      if (ltype == LT_RWLOCK) l->subkind = (int)((pthread_rwlock_t *)lockp)->__data.__flags;
      atomic_store_explicit(&l->used, 1, memory_order_relaxed);
    }
  }
  check_deadline(now_ns());
  leave_tool(t);
}

/* ---- held-lock stack (who held it; sampled hold times) ---------------------------------- */
static NOINLINE void hold_sample(struct thr *t, struct held *h) {
  t->hold_cd = g_mode_hold ? g_hold_period : (1 << 30);
  if (g_mode_hold) h->t0 = now_ns();
}
static inline void held_push(struct thr *t, const void *lock, uintptr_t pc, int kind) {
  int n = t->nheld;
  if (LIKELY(n < HELD_MAX)) {
    struct held *h = &t->held[n];
    h->lock = (uintptr_t)lock; h->pc = pc; h->kind = kind; h->t0 = 0;
    if (UNLIKELY(--t->hold_cd <= 0)) hold_sample(t, h);
    t->nheld = n + 1;
  }
}
/* Returns the hold start time if this hold was sampled, 0 otherwise. */
static inline uint64_t held_pop(struct thr *t, const void *lock, int *kind) {
  int n = t->nheld;
  for (int i = n - 1; i >= 0; i--) {
    if (t->held[i].lock == (uintptr_t)lock) {
      uint64_t t0 = t->held[i].t0;
      *kind = t->held[i].kind;
      /* pc before lock: x86 keeps the order, so a reader that sees the lock sees its pc (or
       * a later one); elsewhere a stale pair is possible and as harmless as holder_pc says */
      ((volatile struct thr *)t)->rel_pc = t->held[i].pc;
      __asm__ volatile("" ::: "memory");
      ((volatile struct thr *)t)->rel_lock = (uintptr_t)lock;
      for (int j = i; j < n - 1; j++) t->held[j] = t->held[j + 1];
      t->nheld = n - 1;
      return t0;
    }
  }
  return 0;
}
static NOINLINE void hold_record(struct thr *t, const void *lock, int hk, uintptr_t ra,
                                 uint64_t t0, uint64_t t1) {
  int kind = hk == HK_RD ? EV_RD_HOLD : hk == HK_WR ? EV_WR_HOLD : EV_MUTEX_HOLD;
  int lt = hk == HK_MUTEX ? LT_MUTEX : LT_RWLOCK;
  record(t, kind, 0, lock, lt, ra, t1 - t0);
}

/* Who holds `lock` right now, and where did they take it?  Reads another thread's record
 * without synchronization: a stale answer is possible and harmless. */
static uintptr_t holder_pc(int tid, uintptr_t lock) {
  struct thr *o = thr_by_tid(tid);
  if (!o) return 0;
  int n = ((volatile struct thr *)o)->nheld;
  if (n > HELD_MAX) n = HELD_MAX;
  for (int i = n - 1; i >= 0; i--) {
    volatile struct held *h = &o->held[i];
    if (h->lock == lock) return h->pc;
  }
  /* released already: where it had been holding it */
  volatile struct thr *vo = o;
  if (vo->rel_lock == lock) return vo->rel_pc;
  return 0;
}

/* ---- cold path: not initialized, not registered, not collecting ------------------------- */
static inline struct thr *cur_thr_slow(void) {
  if (tls_busy) return NULL;
  if (atomic_load_explicit(&g_init, memory_order_acquire) != 2) ensure_init();
  if (!atomic_load_explicit(&g_on, memory_order_relaxed)) return NULL;
  return thr_register();
}
#define GET_THR(t)                                                                         \
  struct thr *t = tls_thr;                                                                 \
  if (UNLIKELY(!t || !atomic_load_explicit(&g_on, memory_order_relaxed))) t = cur_thr_slow()

#define REAL(f, fallback) (LIKELY(real.f != NULL) ? real.f : (fallback))

/* ---- mutexes ---------------------------------------------------------------------------- */
enum { HOW_PLAIN, HOW_TIMED, HOW_CLOCK };

static NOINLINE int mutex_slow(struct thr *t, pthread_mutex_t *m, int r, uintptr_t ra, int how,
                               clockid_t clk, const struct timespec *abst, int ltype) {
  if (r == EOWNERDEAD) {
    t->acq++;
    held_push(t, m, ra, HK_MUTEX);
    record(t, EV_OWNER_DEAD, 0, m, ltype, ra, 0);
    return r;
  }
  if (r != EBUSY) return r;
  int owner = ((volatile pthread_mutex_t *)m)->__data.__owner;
  if (owner == t->tid) { /* error-checking self-deadlock or a real one: nothing to time */
    return how == HOW_PLAIN ? real.mutex_lock(m)
         : how == HOW_TIMED ? real.mutex_timedlock(m, abst) : real.mutex_clocklock(m, clk, abst);
  }
  uintptr_t hpc = holder_pc(owner, (uintptr_t)m);
  uint64_t t0 = now_ns();
  r = how == HOW_PLAIN ? real.mutex_lock(m)
    : how == HOW_TIMED ? real.mutex_timedlock(m, abst) : real.mutex_clocklock(m, clk, abst);
  uint64_t t1 = now_ns();
  if (r == EDEADLK || r == EINVAL || r == ENOTRECOVERABLE) return r;
  uint64_t ns = t1 - t0;
  /* A timed-out wait did block: it counts as a block, flagged, but it acquired nothing. */
  record(t, EV_MUTEX_BLOCK, r == ETIMEDOUT ? F_TIMEDOUT : 0, m, ltype, ra, ns);
  if (owner > 0) holder_add((uintptr_t)m, owner, hpc, ns);
  t->lck_ns += ns;
  t->nblock++;
  if (r == 0 || r == EOWNERDEAD) {
    t->acq++;
    held_push(t, m, ra, HK_MUTEX);
    if (r == EOWNERDEAD) record(t, EV_OWNER_DEAD, 0, m, ltype, ra, 0);
  }
  return r;
}

static inline int mutex_acquire(pthread_mutex_t *m, uintptr_t ra, int how, clockid_t clk,
                                 const struct timespec *abst) {
  GET_THR(t);
  if (UNLIKELY(!t)) {
    if (how == HOW_PLAIN) return REAL(mutex_lock, __pthread_mutex_lock)(m);
    if (!real.mutex_timedlock) ensure_init();
    return how == HOW_TIMED ? real.mutex_timedlock(m, abst) : real.mutex_clocklock(m, clk, abst);
  }
  /* With one thread there is nobody to wait for, and glibc's lock then skips the atomic
   * instruction that trylock always pays: take the lock directly.  Not for process-shared
   * mutexes (kind bit 128), where another process may hold it. */
  int r = (how == HOW_PLAIN && __libc_single_threaded && !(m->__data.__kind & 128))
              ? real.mutex_lock(m) : real.mutex_trylock(m);
  if (LIKELY(r == 0)) {
    t->acq++;
    held_push(t, m, ra, HK_MUTEX);
    return 0;
  }
  return mutex_slow(t, m, r, ra, how, clk, abst, LT_MUTEX);
}

EXPORT int pthread_mutex_lock(pthread_mutex_t *m) { return mutex_acquire(m, RA, HOW_PLAIN, 0, NULL); }
EXPORT int ps_mutex_timedlock(pthread_mutex_t *m, const struct timespec *a) {
  return mutex_acquire(m, RA, HOW_TIMED, 0, a);
}
EXPORT int ps_mutex_clocklock(pthread_mutex_t *m, clockid_t c, const struct timespec *a) {
  return mutex_acquire(m, RA, HOW_CLOCK, c, a);
}
EXPORT int ps_mutex_trylock(pthread_mutex_t *m) {
  GET_THR(t);
  if (UNLIKELY(!t)) return REAL(mutex_trylock, __pthread_mutex_trylock)(m);
  int r = real.mutex_trylock(m);
  if (LIKELY(r == 0)) { t->acq++; held_push(t, m, RA, HK_MUTEX); return 0; }
  if (r == EBUSY) record(t, EV_TRY_FAIL, 0, m, LT_MUTEX, RA, 0);
  else if (r == EOWNERDEAD) { t->acq++; held_push(t, m, RA, HK_MUTEX); record(t, EV_OWNER_DEAD, 0, m, LT_MUTEX, RA, 0); }
  return r;
}
EXPORT int pthread_mutex_unlock(pthread_mutex_t *m) {
  struct thr *t = tls_thr;
  if (t && t->nheld) {
    int hk;
    uint64_t t0 = held_pop(t, m, &hk);
    if (UNLIKELY(t0)) {
      uint64_t t1 = now_ns();
      int r = real.mutex_unlock(m);
      hold_record(t, m, hk, RA, t0, t1);
      return r;
    }
  }
  return REAL(mutex_unlock, __pthread_mutex_unlock)(m);
}
EXPORT int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a) {
  if (!real.mutex_init) ensure_init();
  int r = real.mutex_init(m, a);
  if (r == 0) li_init(m, LT_MUTEX, RA);
  return r;
}

/* ---- rwlocks ---------------------------------------------------------------------------- */
static NOINLINE void reads_during_wwait(pthread_rwlock_t *l) {
  struct linfo *li = li_get((uintptr_t)l, 0);
  if (li && atomic_load_explicit(&li->writers_waiting, memory_order_relaxed) > 0)
    atomic_fetch_add_explicit(&li->reads_while_wwait, 1, memory_order_relaxed);
}

static NOINLINE int rd_slow(struct thr *t, pthread_rwlock_t *l, int r, uintptr_t ra, int how,
                            clockid_t clk, const struct timespec *abst) {
  if (r != EBUSY) return r;
  int owner = ((volatile pthread_rwlock_t *)l)->__data.__cur_writer;
  uintptr_t hpc = owner ? holder_pc(owner, (uintptr_t)l) : 0;
  uint64_t t0 = now_ns();
  r = how == HOW_PLAIN ? real.rw_rdlock(l)
    : how == HOW_TIMED ? real.rw_timedrdlock(l, abst) : real.rw_clockrdlock(l, clk, abst);
  uint64_t t1 = now_ns();
  if (r == EDEADLK || r == EINVAL || r == EAGAIN) return r;
  uint64_t ns = t1 - t0;
  record(t, EV_RD_BLOCK, r == ETIMEDOUT ? F_TIMEDOUT : 0, l, LT_RWLOCK, ra, ns);
  if (owner > 0) holder_add((uintptr_t)l, owner, hpc, ns);
  t->lck_ns += ns;
  t->nblock++;
  if (r == 0) {
    t->acq++;
    held_push(t, l, ra, HK_RD);
    if (atomic_load_explicit(&g_wwait_total, memory_order_relaxed)) reads_during_wwait(l);
  }
  return r;
}
static inline int rd_acquire(pthread_rwlock_t *l, uintptr_t ra, int how, clockid_t clk,
                             const struct timespec *abst) {
  GET_THR(t);
  if (UNLIKELY(!t)) {
    if (!real.rw_rdlock) ensure_init();
    return how == HOW_PLAIN ? real.rw_rdlock(l)
         : how == HOW_TIMED ? real.rw_timedrdlock(l, abst) : real.rw_clockrdlock(l, clk, abst);
  }
  int r = real.rw_tryrdlock(l);
  if (LIKELY(r == 0)) {
    t->acq++;
    held_push(t, l, ra, HK_RD);
    if (UNLIKELY(atomic_load_explicit(&g_wwait_total, memory_order_relaxed))) reads_during_wwait(l);
    return 0;
  }
  return rd_slow(t, l, r, ra, how, clk, abst);
}

static NOINLINE int wr_slow(struct thr *t, pthread_rwlock_t *l, int r, uintptr_t ra, int how,
                            clockid_t clk, const struct timespec *abst) {
  if (r != EBUSY) return r;
  int owner = ((volatile pthread_rwlock_t *)l)->__data.__cur_writer;
  if (owner == t->tid)
    return how == HOW_PLAIN ? real.rw_wrlock(l)
         : how == HOW_TIMED ? real.rw_timedwrlock(l, abst) : real.rw_clockwrlock(l, clk, abst);
  uintptr_t hpc = owner ? holder_pc(owner, (uintptr_t)l) : 0;
  enter_tool();
  struct linfo *li = li_get((uintptr_t)l, 1);
  leave_tool(t);
  uint64_t t0 = now_ns();
  if (li) {
    if (atomic_fetch_add(&li->writers_waiting, 1) == 0) atomic_store(&li->wwait_start, t0);
    atomic_fetch_add(&g_wwait_total, 1);
  }
  r = how == HOW_PLAIN ? real.rw_wrlock(l)
    : how == HOW_TIMED ? real.rw_timedwrlock(l, abst) : real.rw_clockwrlock(l, clk, abst);
  uint64_t t1 = now_ns();
  if (li) {
    atomic_fetch_sub(&g_wwait_total, 1);
    if (atomic_fetch_sub(&li->writers_waiting, 1) == 1)
      atomic_fetch_add(&li->wwait_busy_ns, t1 - atomic_load(&li->wwait_start));
  }
  if (r == EDEADLK || r == EINVAL) return r;
  uint64_t ns = t1 - t0;
  record(t, EV_WR_BLOCK, r == ETIMEDOUT ? F_TIMEDOUT : 0, l, LT_RWLOCK, ra, ns);
  if (owner > 0) holder_add((uintptr_t)l, owner, hpc, ns);
  t->lck_ns += ns;
  t->nblock++;
  if (r == 0) { t->acq++; held_push(t, l, ra, HK_WR); }
  return r;
}
static inline int wr_acquire(pthread_rwlock_t *l, uintptr_t ra, int how, clockid_t clk,
                             const struct timespec *abst) {
  GET_THR(t);
  if (UNLIKELY(!t)) {
    if (!real.rw_wrlock) ensure_init();
    return how == HOW_PLAIN ? real.rw_wrlock(l)
         : how == HOW_TIMED ? real.rw_timedwrlock(l, abst) : real.rw_clockwrlock(l, clk, abst);
  }
  int r = real.rw_trywrlock(l);
  if (LIKELY(r == 0)) { t->acq++; held_push(t, l, ra, HK_WR); return 0; }
  return wr_slow(t, l, r, ra, how, clk, abst);
}

EXPORT int ps_rw_rdlock(pthread_rwlock_t *l) { return rd_acquire(l, RA, HOW_PLAIN, 0, NULL); }
EXPORT int ps_rw_timedrdlock(pthread_rwlock_t *l, const struct timespec *a) { return rd_acquire(l, RA, HOW_TIMED, 0, a); }
EXPORT int ps_rw_clockrdlock(pthread_rwlock_t *l, clockid_t c, const struct timespec *a) { return rd_acquire(l, RA, HOW_CLOCK, c, a); }
EXPORT int ps_rw_wrlock(pthread_rwlock_t *l) { return wr_acquire(l, RA, HOW_PLAIN, 0, NULL); }
EXPORT int ps_rw_timedwrlock(pthread_rwlock_t *l, const struct timespec *a) { return wr_acquire(l, RA, HOW_TIMED, 0, a); }
EXPORT int ps_rw_clockwrlock(pthread_rwlock_t *l, clockid_t c, const struct timespec *a) { return wr_acquire(l, RA, HOW_CLOCK, c, a); }
EXPORT int ps_rw_tryrdlock(pthread_rwlock_t *l) {
  GET_THR(t);
  if (UNLIKELY(!t)) { if (!real.rw_tryrdlock) ensure_init(); return real.rw_tryrdlock(l); }
  int r = real.rw_tryrdlock(l);
  if (r == 0) {
    t->acq++;
    held_push(t, l, RA, HK_RD);
    if (UNLIKELY(atomic_load_explicit(&g_wwait_total, memory_order_relaxed))) reads_during_wwait(l);
  } else if (r == EBUSY) {
    record(t, EV_TRY_FAIL, 0, l, LT_RWLOCK, RA, 0);
  }
  return r;
}
EXPORT int ps_rw_trywrlock(pthread_rwlock_t *l) {
  GET_THR(t);
  if (UNLIKELY(!t)) { if (!real.rw_trywrlock) ensure_init(); return real.rw_trywrlock(l); }
  int r = real.rw_trywrlock(l);
  if (r == 0) { t->acq++; held_push(t, l, RA, HK_WR); }
  else if (r == EBUSY) record(t, EV_TRY_FAIL, 0, l, LT_RWLOCK, RA, 0);
  return r;
}
EXPORT int ps_rw_unlock(pthread_rwlock_t *l) {
  struct thr *t = tls_thr;
  if (!real.rw_unlock) ensure_init();
  if (t && t->nheld) {
    int hk;
    uint64_t t0 = held_pop(t, l, &hk);
    if (UNLIKELY(t0)) {
      uint64_t t1 = now_ns();
      int r = real.rw_unlock(l);
      hold_record(t, l, hk, RA, t0, t1);
      return r;
    }
  }
  return real.rw_unlock(l);
}
EXPORT int ps_rw_init(pthread_rwlock_t *l, const pthread_rwlockattr_t *a) {
  if (!real.rw_init) ensure_init();
  int r = real.rw_init(l, a);
  if (r == 0) li_init(l, LT_RWLOCK, RA);
  return r;
}

/* ---- condition variables ---------------------------------------------------------------- */
enum { CV_NEW, CV_NEW_TIMED, CV_CLOCK, CV_OLD, CV_OLD_TIMED, CV_C11, CV_C11_TIMED };
static int cv_call(int v, void *c, void *m, clockid_t clk, const struct timespec *a) {
  switch (v) {
  case CV_NEW: return real.cond_wait(c, m);
  case CV_NEW_TIMED: return real.cond_timedwait(c, m, a);
  case CV_CLOCK: return real.cond_clockwait(c, m, clk, a);
  case CV_OLD: return real.cond_wait_old(c, m);
  case CV_OLD_TIMED: return real.cond_timedwait_old(c, m, a);
  case CV_C11: return real.cnd_wait(c, m);
  default: return real.cnd_timedwait(c, m, a);
  }
}
static int cv_wait(int v, void *c, void *m, clockid_t clk, const struct timespec *a, uintptr_t ra) {
  GET_THR(t);
  if (!real.cond_wait) ensure_init();
  if (UNLIKELY(!t)) return cv_call(v, c, m, clk, a);
  /* The wait releases the mutex inside libc and re-takes it there: end the hold here and
   * start a new one on return. */
  int hk = HK_MUTEX;
  uint64_t h0 = t->nheld ? held_pop(t, m, &hk) : 0;
  uint64_t t0 = now_ns();
  if (h0) hold_record(t, m, hk, ra, h0, t0);
  int r = cv_call(v, c, m, clk, a);
  uint64_t t1 = now_ns();
  int c11 = v == CV_C11 || v == CV_C11_TIMED;
  int timedout = c11 ? r == thrd_timedout : r == ETIMEDOUT;
  record(t, EV_COND_WAIT, timedout ? F_TIMEDOUT : 0, c, c11 ? LT_CND : LT_COND, ra, t1 - t0);
  t->cvw_ns += t1 - t0;
  t->ncvw++;
  if (c11 ? (r == thrd_success || r == thrd_timedout) : (r == 0 || r == ETIMEDOUT || r == EOWNERDEAD))
    held_push(t, m, ra, HK_MUTEX);
  return r;
}
EXPORT int ps_cond_wait(pthread_cond_t *c, pthread_mutex_t *m) { return cv_wait(CV_NEW, c, m, 0, NULL, RA); }
EXPORT int ps_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *a) {
  return cv_wait(CV_NEW_TIMED, c, m, 0, a, RA);
}
EXPORT int ps_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t k, const struct timespec *a) {
  return cv_wait(CV_CLOCK, c, m, k, a, RA);
}
EXPORT int ps_cond_wait_old(pthread_cond_t *c, pthread_mutex_t *m) { return cv_wait(CV_OLD, c, m, 0, NULL, RA); }
EXPORT int ps_cond_timedwait_old(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *a) {
  return cv_wait(CV_OLD_TIMED, c, m, 0, a, RA);
}

/* ---- spinlocks and semaphores ----------------------------------------------------------- */
EXPORT int ps_spin_lock(pthread_spinlock_t *s) {
  GET_THR(t);
  if (!real.spin_lock) ensure_init();
  if (UNLIKELY(!t)) return real.spin_lock(s);
  if (LIKELY(real.spin_trylock(s) == 0)) { t->acq++; return 0; }
  uint64_t t0 = now_ns();
  int r = real.spin_lock(s);
  uint64_t t1 = now_ns();
  record(t, EV_SPIN_BLOCK, 0, (void *)s, LT_SPIN, RA, t1 - t0);
  t->lck_ns += t1 - t0;
  t->nblock++;
  t->acq++;
  return r;
}
EXPORT int ps_spin_trylock(pthread_spinlock_t *s) {
  GET_THR(t);
  if (!real.spin_trylock) ensure_init();
  int r = real.spin_trylock(s);
  if (t) { if (r == 0) t->acq++; else if (r == EBUSY) record(t, EV_TRY_FAIL, 0, (void *)s, LT_SPIN, RA, 0); }
  return r;
}
EXPORT int ps_spin_unlock(pthread_spinlock_t *s) {
  if (!real.spin_unlock) ensure_init();
  return real.spin_unlock(s);
}
EXPORT int ps_spin_init(pthread_spinlock_t *s, int pshared) {
  if (!real.spin_init) ensure_init();
  int r = real.spin_init(s, pshared);
  if (r == 0) li_init((const void *)s, LT_SPIN, RA);
  return r;
}

static int sem_common(sem_t *s, uintptr_t ra, int how, clockid_t clk, const struct timespec *a) {
  GET_THR(t);
  if (!real.sem_wait) ensure_init();
  if (t) {
    int e = errno;
    if (real.sem_trywait(s) == 0) { errno = e; return 0; }
    if (errno != EAGAIN) { t = NULL; }
    errno = e;
  }
  uint64_t t0 = t ? now_ns() : 0;
  int r = how == HOW_PLAIN ? real.sem_wait(s)
        : how == HOW_TIMED ? real.sem_timedwait(s, a) : real.sem_clockwait(s, clk, a);
  if (t) {
    int e = errno;
    uint64_t t1 = now_ns();
    record(t, EV_SEM_WAIT, (r != 0 && e == ETIMEDOUT) ? F_TIMEDOUT : 0, s, LT_SEM, ra, t1 - t0);
    t->lck_ns += t1 - t0;
    t->nblock++;
    errno = e;
  }
  return r;
}
EXPORT int ps_sem_wait(sem_t *s) { return sem_common(s, RA, HOW_PLAIN, 0, NULL); }
EXPORT int ps_sem_timedwait(sem_t *s, const struct timespec *a) { return sem_common(s, RA, HOW_TIMED, 0, a); }
EXPORT int ps_sem_clockwait(sem_t *s, clockid_t c, const struct timespec *a) { return sem_common(s, RA, HOW_CLOCK, c, a); }
EXPORT int ps_sem_init(sem_t *s, int pshared, unsigned v) {
  if (!real.sem_init) ensure_init();
  int r = real.sem_init(s, pshared, v);
  if (r == 0) li_init(s, LT_SEM, RA);
  return r;
}

/* ---- C11 threads: mtx_* and cnd_* do not go through the pthread symbols ----------------- */
static int mtx_acquire(mtx_t *m, uintptr_t ra, const struct timespec *a, int timed) {
  GET_THR(t);
  if (!real.mtx_lock) ensure_init();
  if (UNLIKELY(!t)) return timed ? real.mtx_timedlock(m, a) : real.mtx_lock(m);
  int r = real.mtx_trylock(m);
  if (LIKELY(r == thrd_success)) { t->acq++; held_push(t, m, ra, HK_MUTEX); return r; }
  if (r != thrd_busy) return r;
  int owner = ((volatile pthread_mutex_t *)(void *)m)->__data.__owner;
  uintptr_t hpc = holder_pc(owner, (uintptr_t)m);
  uint64_t t0 = now_ns();
  r = timed ? real.mtx_timedlock(m, a) : real.mtx_lock(m);
  uint64_t t1 = now_ns();
  if (r == thrd_error) return r;
  record(t, EV_MUTEX_BLOCK, r == thrd_timedout ? F_TIMEDOUT : 0, m, LT_MTX, ra, t1 - t0);
  if (owner > 0) holder_add((uintptr_t)m, owner, hpc, t1 - t0);
  t->lck_ns += t1 - t0;
  t->nblock++;
  if (r == thrd_success) { t->acq++; held_push(t, m, ra, HK_MUTEX); }
  return r;
}
EXPORT int ps_mtx_lock(mtx_t *m) { return mtx_acquire(m, RA, NULL, 0); }
EXPORT int ps_mtx_timedlock(mtx_t *__restrict m, const struct timespec *__restrict a) { return mtx_acquire(m, RA, a, 1); }
EXPORT int ps_mtx_trylock(mtx_t *m) {
  GET_THR(t);
  if (!real.mtx_trylock) ensure_init();
  int r = real.mtx_trylock(m);
  if (t) {
    if (r == thrd_success) { t->acq++; held_push(t, m, RA, HK_MUTEX); }
    else if (r == thrd_busy) record(t, EV_TRY_FAIL, 0, m, LT_MTX, RA, 0);
  }
  return r;
}
EXPORT int ps_mtx_unlock(mtx_t *m) {
  struct thr *t = tls_thr;
  if (!real.mtx_unlock) ensure_init();
  if (t && t->nheld) {
    int hk;
    uint64_t t0 = held_pop(t, m, &hk);
    if (UNLIKELY(t0)) {
      uint64_t t1 = now_ns();
      int r = real.mtx_unlock(m);
      hold_record(t, m, hk, RA, t0, t1);
      return r;
    }
  }
  return real.mtx_unlock(m);
}
EXPORT int ps_mtx_init(mtx_t *m, int type) {
  if (!real.mtx_init) ensure_init();
  int r = real.mtx_init(m, type);
  if (r == thrd_success) li_init(m, LT_MTX, RA);
  return r;
}
EXPORT int ps_cnd_wait(cnd_t *c, mtx_t *m) { return cv_wait(CV_C11, c, m, 0, NULL, RA); }
EXPORT int ps_cnd_timedwait(cnd_t *__restrict c, mtx_t *__restrict m, const struct timespec *__restrict a) {
  return cv_wait(CV_C11_TIMED, c, m, 0, a, RA);
}

/* ---- threads ---------------------------------------------------------------------------- */
static void *thread_trampoline(void *p) {
  struct thr *t = p;
  tls_busy = 1;
  thr_start(t);
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
  return r;
}

/* ---- process lifetime: _exit, exec, fork, signals --------------------------------------- */
EXPORT void _exit(int code) {
  if (!real.exit_) ensure_init();
  dump("_exit");
  real.exit_(code);
}
EXPORT void _Exit(int code) {
  if (!real.Exit_) ensure_init();
  dump("_exit");
  real.Exit_(code);
}
static void before_exec(void) {
  if (!real.execve) ensure_init();
  /* vfork children share our memory but never ran the atfork handler: not our process. */
  if (getpid() == g_pid) dump("exec");
}
EXPORT int execve(const char *p, char *const argv[], char *const envp[]) {
  before_exec();
  return real.execve(p, argv, envp);
}
EXPORT int execv(const char *p, char *const argv[]) {
  before_exec();
  return real.execve(p, argv, environ);
}
EXPORT int execvpe(const char *f, char *const argv[], char *const envp[]) {
  before_exec();
  return real.execvpe(f, argv, envp);
}
EXPORT int execvp(const char *f, char *const argv[]) {
  before_exec();
  return real.execvpe(f, argv, environ);
}
EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
  before_exec();
  return real.fexecve(fd, argv, envp);
}
EXPORT int execveat(int dfd, const char *p, char *const argv[], char *const envp[], int fl) {
  before_exec();
  return real.execveat(dfd, p, argv, envp, fl);
}
#define COLLECT_ARGV(first, ap, argv, envp_out)                                             \
  size_t argc_ = 1;                                                                         \
  va_start(ap, first);                                                                      \
  while (va_arg(ap, char *)) argc_++;                                                       \
  va_end(ap);                                                                               \
  char **argv = __builtin_alloca((argc_ + 1) * sizeof(char *));                             \
  va_start(ap, first);                                                                      \
  argv[0] = (char *)first;                                                                  \
  for (size_t i_ = 1; i_ <= argc_; i_++) argv[i_] = va_arg(ap, char *);                     \
  envp_out;                                                                                 \
  va_end(ap)
EXPORT int execl(const char *p, const char *arg, ...) {
  va_list ap;
  COLLECT_ARGV(arg, ap, argv, (void)0);
  return execv(p, argv);
}
EXPORT int execlp(const char *f, const char *arg, ...) {
  va_list ap;
  COLLECT_ARGV(arg, ap, argv, (void)0);
  return execvp(f, argv);
}
EXPORT int execle(const char *p, const char *arg, ...) {
  va_list ap;
  char **envp;
  COLLECT_ARGV(arg, ap, argv, envp = va_arg(ap, char **));
  return execve(p, argv, envp);
}

static void alloc_tables(void) {
  g_ev = map_zero(sizeof(struct ev) * EV_SLOTS);
  g_li = map_zero(sizeof(struct linfo) * LI_SLOTS);
  g_ho = map_zero(sizeof(struct holder) * HO_SLOTS);
  g_dropped = 0;
  g_li_inits = 0;
}

static void atfork_child(void) {
  /* Each process reports on its own: drop the parent's tables and every thread but this one. */
  struct thr *self = tls_thr;
  if (g_ev) munmap(g_ev, sizeof(struct ev) * EV_SLOTS);
  if (g_li) munmap(g_li, sizeof(struct linfo) * LI_SLOTS);
  if (g_ho) munmap(g_ho, sizeof(struct holder) * HO_SLOTS);
  alloc_tables();
  g_pid = getpid();
  g_image_start_ns = g_window_start_ns = now_ns();
  /* A dump in progress in another parent thread never finishes here. */
  atomic_store(&g_dumping, 0);
  /* The control file and its helper thread belong to the parent: do not answer for it, and
   * do not remove it at our exit. */
  g_attachable = 0;
  if (g_ctl) { munmap(g_ctl, 4096); g_ctl = NULL; }
  g_ctlpath[0] = 0;
  if (g_tid) memset((void *)g_tid, 0, sizeof(*g_tid) * TID_SLOTS);
  if (g_thr) {
    struct thr keep;
    if (self) keep = *self;
    memset(g_thr, 0, sizeof(struct thr) * (size_t)(atomic_load(&g_nthr) < THR_MAX ? atomic_load(&g_nthr) : THR_MAX));
    g_nthr = 0;
    if (self) {
      struct thr *t = thr_alloc();
      if (t) {
        int hold_cd = t->hold_cd;
        *t = keep;
        t->hold_cd = hold_cd;
        t->acq = t->lck_ns = t->cvw_ns = t->nblock = t->ncvw = 0;
        t->base_acq = t->base_lck = t->base_cvw = t->base_nblock = t->base_ncvw = 0;
        t->run0 = t->lat0 = 0;
        t->tid = my_tid();
        t->start_ns = g_image_start_ns;
        t->alive = 1;
        thr_index(t);
        if (g_key_ok) pthread_setspecific(g_key, t);
      }
      tls_thr = t;
    }
  }
}

static int g_fatal_sigs[] = { SIGINT, SIGTERM, SIGHUP };
static void on_fatal_signal(int sig) {
  dump("signal");
  signal(sig, SIG_DFL);
  raise(sig);
}

/* ---- attach control (plockstat --attachable, then plockstat -p) ------------------------- */
struct ctl {
  uint32_t magic, version;
  volatile uint32_t cmd_seq, ack_seq, cmd, mode_hold, depth, hold_period, state, pad;
  char dir[1024];
};
#define CTL_MAGIC 0x504c4b53u /* "PLKS" */
static void start_window(void) {
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

static void *helper_main(void *arg) {
  (void)arg;
  tls_busy = 1; /* the helper's own calls are not the program's */
  for (;;) {
    struct timespec ts = { 0, 50 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    /* Not conditional on g_on: a slow-path event past the deadline may already have
     * switched collection off. */
    if (g_deadline_ns && now_ns() >= g_deadline_ns) {
      atomic_store(&g_on, 0);
      dump("expired");
      g_deadline_ns = 0;
      if (!g_attachable) return NULL;
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

static void ctl_create(void) {
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

static void ensure_init(void) {
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
  g_thr = map_zero(sizeof(struct thr) * THR_MAX);
  g_tid = map_zero(sizeof(*g_tid) * TID_SLOTS);
  alloc_tables();
  if (pthread_key_create(&g_key, key_dtor) == 0) g_key_ok = 1;
  pthread_atfork(NULL, NULL, atfork_child);
  if (g_depth > 0) { void *b[2]; backtrace(b, 2); } /* loads libgcc_s now, not under a lock */
  int collect = g_dir[0] && !g_attachable;
  if (collect) {
    if (g_duration_ns) g_deadline_ns = g_image_start_ns + g_duration_ns;
    atomic_store(&g_on, 1);
    /* Ctrl-C should still produce a report: dump on the default-fatal signals we can see. */
    for (unsigned i = 0; i < sizeof g_fatal_sigs / sizeof g_fatal_sigs[0]; i++) {
      struct sigaction old;
      if (sigaction(g_fatal_sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sa.sa_flags = SA_RESETHAND;
        sigaction(g_fatal_sigs[i], &sa, NULL);
        g_sig_installed = 1;
      }
    }
  }
  if (g_attachable && g_ctldir[0]) ctl_create();
  tls_busy = saved;
  atomic_store_explicit(&g_init, 2, memory_order_release);
  if ((collect && g_deadline_ns) || g_ctl) {
    pthread_t th;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 64 * 1024);
    int b = tls_busy;
    tls_busy = 1;
    real.pthread_create(&th, &a, helper_main, NULL);
    tls_busy = b;
    pthread_attr_destroy(&a);
  }
}

__attribute__((constructor(101))) static void plockstat_ctor(void) { ensure_init(); }
__attribute__((destructor)) static void plockstat_dtor(void) {
  dump("exit");
  atomic_store(&g_on, 0);
  if (g_ctlpath[0] && getpid() == g_pid && g_ctl) unlink(g_ctlpath);
}

/* ---- the data file ---------------------------------------------------------------------- */
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

static void dump(const char *reason) {
  if (atomic_load(&g_init) != 2 || !g_dir[0] || !g_ev) return;
  if (getpid() != g_pid) return;
  int me = my_tid();
  int z = 0;
  if (!atomic_compare_exchange_strong(&g_dumping, &z, me)) {
    if (z == me) return; /* a signal arrived while this thread was dumping */
    /* Another thread is dumping (e.g. _exit racing the -e deadline): let it finish so that
     * the process does not vanish under it. */
    for (int i = 0; i < 400 && atomic_load(&g_dumping); i++) {
      struct timespec ts = { 0, 5 * 1000 * 1000 };
      nanosleep(&ts, NULL);
    }
    return;
  }
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
    W.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  } else {
    W.fd = -1;
  }
  if (W.fd >= 0) {
    uint64_t tend = now_ns();
    w_str("plockstat-data 1\npid "); w_u64((uint64_t)g_pid);
    w_str("\nppid "); w_u64((uint64_t)getppid());
    w_str("\nreason "); w_str(reason);
    w_str("\nimage_start_ns "); w_u64(g_image_start_ns);
    w_str("\nwindow_start_ns "); w_u64(g_window_start_ns);
    w_str("\nend_ns "); w_u64(tend);
    w_str("\nhold "); w_u64((uint64_t)g_mode_hold);
    w_str("\nholdsample "); w_u64((uint64_t)g_hold_period);
    w_str("\ndepth "); w_u64((uint64_t)g_depth);
    w_str("\ndropped "); w_u64(atomic_load(&g_dropped));
    char exe[1024];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (el > 0) { exe[el] = 0; w_str("\nexe "); w_str(exe); }
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
    /* events: E kind flags ltype lock count sum max nbuckets:b=c,... stack */
    for (uint32_t i = 0; i < EV_SLOTS; i++) {
      struct ev *e = &g_ev[i];
      if (atomic_load(&e->state) != 2 || !atomic_load(&e->count)) continue;
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
    /* locks: L lock ltype subkind init_pc first_pc reads_while_wwait wwait_busy_ns owner_dead */
    for (uint32_t i = 0; i < LI_SLOTS; i++) {
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

/* ---- symbol versions: the same names and versions as glibc exports ---------------------- */
#define V2(impl, name, old, def)                                                           \
  __asm__(".symver " #impl "," #name "@" old "\n\t.symver " #impl "," #name "@@" def)
#define V1(impl, name, ver) __asm__(".symver " #impl "," #name "@@" ver)
V2(ps_mutex_trylock, pthread_mutex_trylock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_mutex_timedlock, pthread_mutex_timedlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_mutex_clocklock, pthread_mutex_clocklock, "GLIBC_2.30", "GLIBC_2.34");
V2(ps_rw_rdlock, pthread_rwlock_rdlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_tryrdlock, pthread_rwlock_tryrdlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_timedrdlock, pthread_rwlock_timedrdlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_clockrdlock, pthread_rwlock_clockrdlock, "GLIBC_2.30", "GLIBC_2.34");
V2(ps_rw_wrlock, pthread_rwlock_wrlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_trywrlock, pthread_rwlock_trywrlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_timedwrlock, pthread_rwlock_timedwrlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_clockwrlock, pthread_rwlock_clockwrlock, "GLIBC_2.30", "GLIBC_2.34");
V2(ps_rw_unlock, pthread_rwlock_unlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_rw_init, pthread_rwlock_init, "GLIBC_2.2.5", "GLIBC_2.34");
/* pthread_cond_*: two different ABIs behind one name. */
V1(ps_cond_wait, pthread_cond_wait, "GLIBC_2.3.2");
V1(ps_cond_timedwait, pthread_cond_timedwait, "GLIBC_2.3.2");
__asm__(".symver ps_cond_wait_old,pthread_cond_wait@GLIBC_2.2.5");
__asm__(".symver ps_cond_timedwait_old,pthread_cond_timedwait@GLIBC_2.2.5");
V2(ps_cond_clockwait, pthread_cond_clockwait, "GLIBC_2.30", "GLIBC_2.34");
V2(ps_spin_lock, pthread_spin_lock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_spin_trylock, pthread_spin_trylock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_spin_unlock, pthread_spin_unlock, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_spin_init, pthread_spin_init, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_sem_wait, sem_wait, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_sem_timedwait, sem_timedwait, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_sem_clockwait, sem_clockwait, "GLIBC_2.30", "GLIBC_2.34");
V2(ps_sem_init, sem_init, "GLIBC_2.2.5", "GLIBC_2.34");
V2(ps_mtx_lock, mtx_lock, "GLIBC_2.28", "GLIBC_2.34");
V2(ps_mtx_timedlock, mtx_timedlock, "GLIBC_2.28", "GLIBC_2.34");
V2(ps_mtx_trylock, mtx_trylock, "GLIBC_2.28", "GLIBC_2.34");
V2(ps_mtx_unlock, mtx_unlock, "GLIBC_2.28", "GLIBC_2.34");
V2(ps_mtx_init, mtx_init, "GLIBC_2.28", "GLIBC_2.34");
V2(ps_cnd_wait, cnd_wait, "GLIBC_2.28", "GLIBC_2.34");
V2(ps_cnd_timedwait, cnd_timedwait, "GLIBC_2.28", "GLIBC_2.34");
V2(ps_pthread_create, pthread_create, "GLIBC_2.2.5", "GLIBC_2.34");
