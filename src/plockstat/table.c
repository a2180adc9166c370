/* table.c: the three shared tables: events (one row per kind, lock and stack, with counts,
 * sums and a histogram), locks (where each was initialized and first contended), and holders
 * (who held a lock while others waited, and where they took it).
 *
 * Invariants: slots are claimed with one CAS (an event index slot 0 -> row, a holder's state
 * 0 -> 1 -> 2, a lock's key 0 -> lock) and never freed while the process runs, so a reader
 * holding a pointer to a row never sees it reused; probing is bounded, and a full table drops
 * the event and counts it in g_dropped, which the report shows. */
#include "ps.h"

/* The event table: rows handed out in order (a row is ~700 bytes: histogram and stack) under
 * an open-addressed index of row numbers, so memory grows with the rows in use, not with the
 * table's capacity, and a dump reads only the rows in use.  A row is filled before the CAS that
 * publishes its number; a thread that loses the race for an index slot to the same key leaves
 * its row unpublished (count 0: the dump skips it). */
struct ev *ev_get(int kind, unsigned flags, uintptr_t lock, int ltype,
                  const uintptr_t *stk, int depth) {
  if (!g_ev) return NULL;
  uint64_t h = mix(mix(mix(0, lock), (uint64_t)kind << 8 | flags), (uint64_t)depth);
  for (int i = 0; i < depth; i++) h = mix(h, stk[i]);
  uint32_t mask = g_ev_slots - 1, i = (uint32_t)h & mask, mine = 0;
  for (int probe = 0; probe < 256; probe++, i = (i + 1) & mask) {
    uint32_t r = atomic_load_explicit(&g_ev_index[i], memory_order_acquire);
    if (r == 0) {
      if (!mine) {
        uint32_t n = atomic_fetch_add(&g_ev_nrows, 1);
        if (n >= g_ev_rows) break; /* full */
        struct ev *e = &g_ev[n];
        e->hash = h; e->lock = lock; e->kind = (uint8_t)kind; e->flags = (uint8_t)flags;
        e->ltype = (uint8_t)ltype; e->depth = (uint8_t)depth;
        for (int k = 0; k < depth; k++) e->stack[k] = stk[k];
        mine = n + 1;
      }
      uint32_t z = 0;
      if (atomic_compare_exchange_strong(&g_ev_index[i], &z, mine)) return &g_ev[mine - 1];
      r = z;
    }
    struct ev *e = &g_ev[r - 1];
    if (e->hash == h && e->lock == lock && e->kind == kind && e->flags == flags) return e;
  }
  atomic_fetch_add(&g_dropped, 1);
  return NULL;
}

/* Init sites, for lock names: locks made by one function (pigz's new_lock_, a server's
 * per-connection mutex) differ by their order of creation there, which is the same from run to
 * run when the program is; the n-th lock from a site is "#n". */
#define SITE_SLOTS 8192u
static struct { _Atomic uint64_t key; _Atomic uint32_t n; } g_site[SITE_SLOTS];

static uint32_t site_ordinal(uintptr_t pc, uintptr_t caller) {
  uint64_t k = mix(mix(0, pc), caller) | 1;
  uint32_t i = (uint32_t)k & (SITE_SLOTS - 1);
  for (int probe = 0; probe < 64; probe++, i = (i + 1) & (SITE_SLOTS - 1)) {
    uint64_t z = 0;
    if (atomic_load_explicit(&g_site[i].key, memory_order_acquire) == k ||
        atomic_compare_exchange_strong(&g_site[i].key, &z, k) || z == k)
      return atomic_fetch_add(&g_site[i].n, 1) + 1;
  }
  return 0; /* table full: named by its site alone */
}

/* The caller of the function that called pthread_*_init: "new_lock_" says little; who asked
 * for the lock says which one it is.  backtrace() costs a microsecond or two, paid once per
 * lock initialization while the lock table has room (see li_init's cap). */
static uintptr_t init_caller(uintptr_t ra) {
  void *buf[8];
  int n = backtrace(buf, 8);
  for (int i = 0; i + 1 < n; i++)
    if ((uintptr_t)buf[i] == ra) return (uintptr_t)buf[i + 1];
  return 0;
}

/* Record where a lock was initialized, to name it if it is not a global.  Programs that make
 * millions of short-lived locks must not fill the table that the contended ones need. */
void li_init(const void *lock, int ltype, uintptr_t pc) {
  if (tls_busy || !g_li) return;
  if (atomic_load_explicit(&g_li_inits, memory_order_relaxed) > g_li_slots / 2) return;
  struct thr *t = tls_thr;
  enter_tool();
  struct linfo *l = li_get((uintptr_t)lock, 1);
  if (l) {
    if (!l->init_pc) atomic_fetch_add_explicit(&g_li_inits, 1, memory_order_relaxed);
    uintptr_t caller = init_caller(pc);
    l->init_pc = pc;
    l->init_caller = caller;
    l->ordinal = site_ordinal(pc, caller);
    l->ltype = (uint8_t)ltype;
  }
  leave_tool(t);
}

/* A condition variable with no name of its own (heap-allocated, never seen initialized) is
 * named after the mutex it is used with. */
void li_partner(const void *cond, const void *mutex) {
  struct linfo *l = li_get((uintptr_t)cond, 0);
  uintptr_t z = 0;
  if (!l || !atomic_compare_exchange_strong(&l->partner, &z, (uintptr_t)mutex)) return;
  /* the data file lists used locks only: the partner's record must be there to name it */
  struct linfo *m = li_get((uintptr_t)mutex, 0);
  uint8_t u = 0;
  if (m) atomic_compare_exchange_strong(&m->used, &u, 2); /* 2: listed, not yet contended */
}

struct linfo *li_get(uintptr_t lock, int create) {
  struct linfo *tab = g_li;
  if (!tab || !lock) return NULL;
  uint32_t i = (uint32_t)(mix(0, lock)) & (g_li_slots - 1);
  for (int probe = 0; probe < 512; probe++, i = (i + 1) & (g_li_slots - 1)) {
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

void holder_add(uintptr_t lock, int tid, uintptr_t pc, uint64_t ns) {
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

/* About to block: note the wait where a dump can see it (a hang, a deadlock, a thread parked
 * on a condition variable when the program is stopped), with the stack, which record() then
 * reuses instead of unwinding a second time. */
void wait_begin(struct thr *t, int kind, const void *lock, const void *mutex, uintptr_t ra,
                int owner, uintptr_t owner_pc) {
  enter_tool();
  t->w_kind = kind;
  t->w_mutex = (uintptr_t)mutex;
  t->w_pc = ra;
  t->w_owner = owner;
  t->w_owner_pc = owner_pc;
  t->w_depth = capture_stack(t->w_stk, ra);
  t->w_stk_lock = (uintptr_t)lock;
  /* The lock's record must be in the data file to name it while the wait is in progress. */
  struct linfo *l = li_get((uintptr_t)lock, 1);
  uint8_t u = 0;
  if (l) atomic_compare_exchange_strong(&l->used, &u, 2);
  if (mutex) li_partner(lock, mutex);
  t->w_t0 = now_ns();
  __asm__ volatile("" ::: "memory");
  t->w_lock = (uintptr_t)lock;
  leave_tool(t);
}

void record(struct thr *t, int kind, unsigned flags, const void *lockp, int ltype,
                   uintptr_t ra, uint64_t ns) {
  uintptr_t lock = (uintptr_t)lockp;
  enter_tool();
  uintptr_t stk[MAX_DEPTH];
  int d;
  if (t->w_depth && t->w_pc == ra && t->w_stk_lock == lock) { /* wait_begin's, for this wait */
    d = t->w_depth;
    for (int i = 0; i < d; i++) stk[i] = t->w_stk[i];
  } else {
    d = capture_stack(stk, ra);
  }
  t->w_depth = 0;
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
    if (atomic_load_explicit(&l->used, memory_order_relaxed) != 1) {
      if (ltype == LT_MUTEX || ltype == LT_MTX) l->subkind = ((pthread_mutex_t *)lockp)->__data.__kind;
      if (ltype == LT_RWLOCK) l->subkind = (int)((pthread_rwlock_t *)lockp)->__data.__flags;
      atomic_store_explicit(&l->used, 1, memory_order_relaxed);
    }
  }
  check_deadline(now_ns());
  leave_tool(t);
}


/* Sizes: -x aggsize (bytes of event rows) and -x bufsize (bytes of lock records) from the
 * command line, as DTrace's options size its buffers; the index has twice the slots of the
 * rows, so probes stay short until the rows run out. */
void alloc_tables(void) {
  g_ev_rows = g_aggsize ? (uint32_t)(g_aggsize / sizeof(struct ev)) : EV_ROWS_DEFAULT;
  if (g_ev_rows < 256) g_ev_rows = 256;
  if (g_ev_rows > (1u << 22)) g_ev_rows = 1u << 22;
  g_ev_slots = 1;
  while (g_ev_slots < 2 * g_ev_rows) g_ev_slots <<= 1;
  g_li_slots = LI_SLOTS_DEFAULT;
  if (g_bufsize) {
    uint64_t want = g_bufsize / sizeof(struct linfo);
    g_li_slots = 1024;
    while (g_li_slots < want && g_li_slots < (1u << 22)) g_li_slots <<= 1;
  }
  atomic_store(&g_ev_nrows, 0);
  g_ev = map_zero(sizeof(struct ev) * g_ev_rows);
  g_ev_index = map_zero(sizeof(*g_ev_index) * g_ev_slots);
  g_li = map_zero(sizeof(struct linfo) * g_li_slots);
  g_ho = map_zero(sizeof(struct holder) * HO_SLOTS);
  g_dropped = 0;
  g_li_inits = 0;
  memset(g_site, 0, sizeof g_site);
}


void free_tables(void) {
  if (g_ev) munmap(g_ev, sizeof(struct ev) * g_ev_rows);
  if (g_ev_index) munmap((void *)g_ev_index, sizeof(*g_ev_index) * g_ev_slots);
  if (g_li) munmap(g_li, sizeof(struct linfo) * g_li_slots);
  if (g_ho) munmap(g_ho, sizeof(struct holder) * HO_SLOTS);
  g_ev = NULL; g_ev_index = NULL; g_li = NULL; g_ho = NULL;
}
