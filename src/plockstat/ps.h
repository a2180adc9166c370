/* ps.h: what every part of libplockstat.so shares: the data-file event codes, the tables'
 * records, the per-thread record, the globals, the real libc functions, and the inline pieces
 * of the uncontended path (the held-lock stack, GET_THR).
 *
 * libplockstat.so is the in-process half of plockstat.  Loaded with LD_PRELOAD, it interposes
 * every public way a Linux program takes a lock, counts the uncontended case in per-thread
 * records, and times only the slow path.  At exit (and at _exit, exec, fork child exit, a fatal
 * signal, the -e deadline, a detach, and once a second while threads run) it writes one text
 * file with the aggregated tables plus a copy of /proc/self/maps; the plockstat CLI symbolizes
 * it offline.  One file per concept:
 *   mutex.c rwlock.c cond.c spin_sem.c   the interposers, by family (pthread and C11)
 *   thread.c    per-thread records, pthread_create       holder.c  who holds a lock, hold times
 *   table.c     the event, lock and holder tables         datafile.c  the data file
 *   lifetime.c  _exit, exec, fork, fatal signals          attach.c  -p control, helper thread
 *   init.c      options, the real functions, start-up     util.c   /proc readers, small helpers
 *
 * Rules every file lives by, because it runs inside arbitrary programs:
 *  - no malloc and no stdio anywhere (the program's heap may be mtheap, may be corrupt, or we may
 *    be inside a signal handler); all memory comes from mmap;
 *  - no lock of our own: tables are open-addressed with CAS-claimed slots and atomic counters;
 *  - the uncontended path is: TLS load, trylock, two TLS stores, return.
 */
#ifndef PS_H
#define PS_H
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
#define EV_ROWS_DEFAULT (1u << 16)   /* 64K rows: ~45 MB reserved, touched as rows are used */
#define LI_SLOTS_DEFAULT (1u << 16)
#define HO_SLOTS (1u << 13)
#define THR_MAX (1u << 15)
#define TID_SLOTS (1u << 16)

struct ev {
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
  uintptr_t init_pc, init_caller;    /* where it was initialized, and that function's caller */
  uint32_t ordinal;                  /* n-th lock initialized there (1-based): its stable name */
  _Atomic uintptr_t partner;         /* a condvar: the mutex its first wait used */
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
  /* The wait in progress (w_lock != 0 while this thread is blocked in a lock, condition
   * variable or semaphore): what a report shows of a hang or a deadlock.  Written by the owner
   * in the slow path only, w_lock last on entry and first on exit; read by a dump from any
   * thread, where a stale value is harmless. */
  volatile uintptr_t w_lock;
  uintptr_t w_mutex, w_pc, w_owner_pc; /* cond: its mutex; the call; where the owner took it */
  uint64_t w_t0;
  int w_kind, w_owner, w_depth;        /* event kind; the owner's tid at the start, or 0 */
  uintptr_t w_stk[MAX_DEPTH];          /* the stack, captured once for the wait ... */
  uintptr_t w_stk_lock;                /* ... on this lock, for record() to reuse */
};


/* ---- globals (defined in init.c; the TLS in thread.c) --------------------------------- */
extern __thread struct thr *tls_thr __attribute__((tls_model("initial-exec")));
extern __thread int tls_busy __attribute__((tls_model("initial-exec")));
extern __thread int tls_noreg __attribute__((tls_model("initial-exec")));

extern _Atomic int g_on;             /* collecting now */
extern _Atomic int g_init;           /* 0 none, 1 running, 2 done */
extern int g_mode_hold;              /* -H or -A */
extern int g_hold_period;
extern int g_depth;                  /* -s depth (0: caller only) */
extern int g_attachable;
extern uint64_t g_deadline_ns;       /* -e: 0 = none */
extern uint64_t g_duration_ns;
extern char g_dir[1024];
extern char g_ctldir[1024];
extern char g_exec_path[1024];        /* the program an exec is about to run */
extern pid_t g_pid;
extern uint64_t g_image_start_ns, g_window_start_ns;
extern uint64_t g_main_run0, g_main_lat0; /* the main thread's cpu time when this image began */
extern _Atomic int g_wwait_total;    /* writers currently waiting on any rwlock */
extern _Atomic uint64_t g_dropped;
extern _Atomic uint32_t g_li_inits;  /* init-time lock records, capped to leave room for events */
extern pthread_key_t g_key;
extern int g_key_ok;
extern int g_windows;                /* attach windows started so far */
extern _Atomic int g_dumping;        /* tid of the thread writing the data file, or 0 */
extern volatile sig_atomic_t g_fatal_sig; /* the signal that is ending the process, or 0 */
struct ctl;
extern struct ctl *g_ctl;
extern char g_ctlpath[1100];

extern struct ev *g_ev;              /* event rows, in the order they were first seen */
extern _Atomic uint32_t *g_ev_index; /* g_ev_slots slots: 0 empty, else row + 1 */
extern uint32_t g_ev_rows, g_ev_slots, g_li_slots;
extern _Atomic uint32_t g_ev_nrows;  /* rows handed out (may pass g_ev_rows when full) */
extern uint64_t g_aggsize, g_bufsize; /* -x aggsize / bufsize in bytes, 0: default */
extern struct linfo *g_li;
extern struct holder *g_ho;
extern struct thr *g_thr;
extern _Atomic uint32_t g_nthr;
extern _Atomic(struct thr *) *g_tid;  /* tid hash -> thread record */

/* The real functions, resolved once in init.c. */
struct ps_real {
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
};
extern struct ps_real real;

/* libc's own aliases: used if a lock is taken while the dlsym-resolved pointers are not there
 * yet (another library's constructor, or dlsym itself allocating through a malloc that locks). */
extern int __pthread_mutex_lock(pthread_mutex_t *);
extern int __pthread_mutex_trylock(pthread_mutex_t *);
extern int __pthread_mutex_unlock(pthread_mutex_t *);
__asm__(".symver __pthread_mutex_lock,__pthread_mutex_lock@GLIBC_2.2.5");
__asm__(".symver __pthread_mutex_trylock,__pthread_mutex_trylock@GLIBC_2.2.5");
__asm__(".symver __pthread_mutex_unlock,__pthread_mutex_unlock@GLIBC_2.2.5");

/* Every interposed name carries the version(s) glibc gives it (see libplockstat.map). */
#define V2(impl, name, old, def)                                                           \
  __asm__(".symver " #impl "," #name "@" old "\n\t.symver " #impl "," #name "@@" def)
#define V1(impl, name, ver) __asm__(".symver " #impl "," #name "@@" ver)

/* ---- functions shared between the files ----------------------------------------------- */
/* init.c */
void ensure_init(void);
/* util.c: async-signal-safe, no libc state */
void *map_zero(size_t n);
void *resolve(const char *name, const char *ver);
size_t slen(const char *s);
int read_small(const char *path, char *buf, size_t cap);
uint64_t parse_u64(const char **pp);
void read_schedstat(int tid, uint64_t *run, uint64_t *lat);
void read_comm(int tid, char out[16]);
/* table.c */
void alloc_tables(void);
void free_tables(void);
struct ev *ev_get(int kind, unsigned flags, uintptr_t lock, int ltype, const uintptr_t *stk, int depth);
struct linfo *li_get(uintptr_t lock, int create);
void li_init(const void *lock, int ltype, uintptr_t pc);
void li_partner(const void *cond, const void *mutex);
void holder_add(uintptr_t lock, int tid, uintptr_t pc, uint64_t ns);
void record(struct thr *t, int kind, unsigned flags, const void *lockp, int ltype, uintptr_t ra,
            uint64_t ns);
/* thread.c */
struct thr *thr_by_tid(int tid);
void thr_index(struct thr *t);
struct thr *thr_alloc(void);
void thr_start(struct thr *t, int fresh);
struct thr *thr_register(void);
void key_dtor(void *p);        /* the pthread key's destructor: a thread ends */
/* holder.c */
void hold_sample(struct thr *t, struct held *h);
void hold_record(struct thr *t, const void *lock, int hk, uintptr_t ra, uint64_t t0, uint64_t t1);
uintptr_t holder_pc(int tid, uintptr_t lock);
/* attach.c */
void start_window(void);
void ctl_create(void);
void helper_start(void);
void helper_forget(void);
/* datafile.c */
void dump(const char *reason);
/* lifetime.c */
void atfork_child(void);
void fatal_signals_install(void);

/* ---- waits in progress (table.c) --------------------------------------------------------- */
void wait_begin(struct thr *t, int kind, const void *lock, const void *mutex, uintptr_t ra,
                int owner, uintptr_t owner_pc);
static inline void wait_end(struct thr *t) {
  t->w_lock = 0;
  __asm__ volatile("" ::: "memory");
}

/* ---- inline pieces of the fast paths -------------------------------------------------- */
enum { HOW_PLAIN, HOW_TIMED, HOW_CLOCK };

static inline uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static inline int my_tid(void) { return (int)syscall(SYS_gettid); }
static inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}
static inline unsigned hist_bucket(uint64_t ns) {
  unsigned b = 63u - (unsigned)__builtin_clzll(ns | 1);
  return b >= HIST_BUCKETS ? HIST_BUCKETS - 1 : b;
}

/* Entering our own slow-path code: nested lock calls (backtrace's unwinder, dlsym) must pass
 * straight through, which the NULL TLS pointer makes the fast path do. */
static inline void enter_tool(void) { tls_busy = 1; tls_thr = NULL; }
static inline void leave_tool(struct thr *t) { tls_busy = 0; tls_thr = t; }

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

#endif
