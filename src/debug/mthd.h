/* mtheap-debug internals: what the files of libmtheap-debug.so share.
 *
 * The debug library wraps every block it hands out.  A block is carved from one core block
 * (mtheap_memalign), so the core's own checks and fast paths stay as they are:
 *
 *   core block:  [lead pad][header (48..56 bytes)][left redzone 16][user bytes][right redzone]
 *                ^core                                              ^user      ^user + size
 *
 *   - the header sits at user - MTHD_PRE_MIN + MTHD_LEAD: its place follows from the user
 *     pointer alone, whatever the alignment (larger alignments only grow the lead pad);
 *   - the right redzone starts exactly at user + size (byte exact) and runs to the end of the
 *     core block's usable size, at least mthd_right_rz(size) bytes;
 *   - the lead pad (at least 8 bytes) is where the core writes its free-list link once the
 *     block is back in the core, so the header itself survives a release until reuse.
 *
 * Sampled blocks (sample.c) have no header: they live in their own guarded pool, and every
 * entry point asks the pool first (one range test).
 *
 * Nothing here may call the overridden malloc: our metadata comes from mmap or from the core's
 * prefixed API.  A thread that re-enters malloc from inside the debug machinery (the unwinder,
 * the reporter) gets a plain header block without stack capture or checks (MTHD_F_INTERNAL).
 */
#ifndef MTHD_H
#define MTHD_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mtheap.h"

#define MTHD_HIDDEN __attribute__((visibility("hidden")))
#define MTHD_EXPORT __attribute__((visibility("default")))
#define MTHD_LIKELY(x) __builtin_expect(!!(x), 1)
#define MTHD_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- options (options.c) ---- */
typedef struct {
  bool headers;          /* any of guards/patterns/quarantine/audit/leaks: blocks get headers */
  bool guards, patterns, quarantine, audit, leaks;
  bool cont;             /* report and keep going instead of aborting */
  bool lines;            /* file:line through addr2line at report time */
  int unwind;            /* MTHD_UNWIND_*: how stacks are captured */
  int depth;             /* frames kept per stack */
  size_t quarantine_bytes, quarantine_blocks, quarantine_max_block;
  size_t fill_max;       /* bytes of a fresh block filled with the alloc pattern */
  long sample;           /* 0 = off; else one allocation in about `sample` is guarded */
  size_t sample_slots;   /* live sampled blocks at most */
  size_t sample_max;     /* largest sampled block */
  size_t sample_align;   /* sampled blocks are aligned to at least this (1..16; 1 = natural) */
  bool sample_mprotect;  /* open/close slots with mprotect even where guard markers exist */
  int sample_side;       /* MTHD_SIDE_*: which guard page a sampled block touches */
  int leaks_exitcode;    /* 0: leaks leave the exit status alone */
  int leaks_max;         /* leak groups printed in full */
  int error_exitcode;    /* with continue: exit status at exit if errors were reported */
  bool verbose;
} mthd_options_t;

enum { MTHD_UNWIND_CFI, MTHD_UNWIND_LIBGCC, MTHD_UNWIND_FP };
/* after: overflows fault (underflow writes are found at free); before: underflows fault
 * (overflow writes found at free); random: each sample picks one, GWP-ASan's way, for fleets */
enum { MTHD_SIDE_AFTER, MTHD_SIDE_BEFORE, MTHD_SIDE_RANDOM };
extern MTHD_HIDDEN mthd_options_t mthd_opt;
MTHD_HIDDEN void mthd_options_init(void);
/* MTHEAP_DEBUG=guardpage: sample=1 with this many slots (each one guard page apart: 17 pages of
 * address space at most, untouched until used) for blocks up to this size */
#define MTHD_GUARDPAGE_SLOTS 262144
#define MTHD_GUARDPAGE_MAX ((size_t)64 << 10)

/* ---- process state (override.c) ---- */
extern MTHD_HIDDEN _Atomic int mthd_ready;   /* 0 none, 1 initializing, 2 ready */

/* ---- main's frames (start.c) ---- */
extern MTHD_HIDDEN uintptr_t mthd_main_frame;       /* main's frames lie below this address */
extern MTHD_HIDDEN volatile int mthd_main_returned; /* ... and are dead once this is set */
MTHD_HIDDEN void mthd_init_slow(void);
static inline void mthd_init(void) {
  if (MTHD_UNLIKELY(atomic_load_explicit(&mthd_ready, memory_order_acquire) != 2)) mthd_init_slow();
}

typedef struct {
  uint32_t tid;          /* cached gettid(); reset in the fork child */
  int busy;              /* >0 while inside the debug machinery on this thread */
  long sample_countdown; /* allocations until the next sampled one */
  uint64_t rng;
} mthd_tls_t;
extern MTHD_HIDDEN __thread mthd_tls_t mthd_tls __attribute__((tls_model("initial-exec")));
MTHD_HIDDEN uint32_t mthd_tid(void);

/* ---- a small lock (spin, then yield): critical sections here are a few stores long ---- */
typedef struct { _Atomic int v; } mthd_lock_t;
static inline void mthd_lock(mthd_lock_t *l) {
  for (int spins = 0; atomic_exchange_explicit(&l->v, 1, memory_order_acquire); spins++) {
    while (atomic_load_explicit(&l->v, memory_order_relaxed)) {
      if (spins++ > 64) {
        extern int sched_yield(void);
        sched_yield();
      } else {
        __builtin_ia32_pause();
      }
    }
  }
}
static inline void mthd_unlock(mthd_lock_t *l) { atomic_store_explicit(&l->v, 0, memory_order_release); }

/* ---- block header (guard.c) ---- */
/* UNKNOWN: malloc/free called by an object whose operator new/delete are not ours, so either
 * family (foreign.c) */
enum { MTHD_FAM_MALLOC = 1, MTHD_FAM_NEW, MTHD_FAM_NEW_ARRAY, MTHD_FAM_UNKNOWN };
enum { MTHD_LIVE = 0xA1, MTHD_QUARANTINED = 0xF2, MTHD_RELEASED = 0xD3 };
enum { MTHD_F_INTERNAL = 1, MTHD_F_ALIGNED_NEW = 2, MTHD_F_REPORTED = 4 };

typedef struct mthd_hdr {
  uint32_t magic;
  uint8_t state, family, align_log2, flags;
  uint64_t size;                      /* requested bytes */
  struct mthd_hdr *next, *prev;       /* live: registry stripe list; quarantined: FIFO (next) */
  uint32_t alloc_stack, free_stack;   /* stack depot ids, 0 = none */
  uint32_t alloc_tid, free_tid;
  uint32_t pre;                       /* user - core */
  uint16_t stripe;
  uint16_t check;                     /* hash of the fields fixed at allocation */
} mthd_hdr_t;

#define MTHD_MAGIC 0x4448544Du        /* "MTHD" */
#define MTHD_LRZ 16                   /* left redzone: between header and user bytes */
#define MTHD_LEAD 8                   /* lead pad: the core's link when released */
#define MTHD_PRE_MIN (MTHD_LEAD + sizeof(mthd_hdr_t) + MTHD_LRZ)
#define MTHD_PAT_REDZONE 0xFA
#define MTHD_PAT_ALLOC 0xBE
#define MTHD_PAT_FREE 0xDF

_Static_assert(sizeof(mthd_hdr_t) == 56, "header layout");
_Static_assert(MTHD_PRE_MIN == 80, "pre is a multiple of 16");

static inline mthd_hdr_t *mthd_hdr_of(const void *user) {
  return (mthd_hdr_t *)((uint8_t *)user - MTHD_LRZ - sizeof(mthd_hdr_t));
}
static inline uint8_t *mthd_user_of(const mthd_hdr_t *h) {
  return (uint8_t *)h + sizeof(mthd_hdr_t) + MTHD_LRZ;
}
static inline size_t mthd_right_rz(size_t size) {
  return size <= 64 ? 16 : size <= 512 ? 32 : size <= 4096 ? 64 : 128;
}

MTHD_HIDDEN uint16_t mthd_hdr_check(const mthd_hdr_t *h);
MTHD_HIDDEN size_t mthd_scan_pattern(const uint8_t *p, size_t n, uint8_t pat);
MTHD_HIDDEN bool mthd_hdr_valid(const mthd_hdr_t *h);
MTHD_HIDDEN void *mthd_block_alloc(size_t size, size_t align, int family, int flags, uintptr_t caller);
MTHD_HIDDEN void mthd_block_free(void *p, int family, size_t sized, size_t align, const char *fn, uintptr_t caller);
MTHD_HIDDEN void *mthd_block_realloc(void *p, size_t size, uintptr_t caller);
MTHD_HIDDEN size_t mthd_block_usable(void *p, uintptr_t caller);
MTHD_HIDDEN void mthd_block_release(mthd_hdr_t *h);   /* back to the core, from quarantine */
MTHD_HIDDEN int mthd_block_check(mthd_hdr_t *h, const char *when, uintptr_t caller);
MTHD_HIDDEN int mthd_check_all(const char *when, uintptr_t caller);
MTHD_HIDDEN mthd_hdr_t *mthd_find_block(const void *addr, bool *quarantined);

/* registry of live blocks (guard.c): stripes of doubly linked lists */
#define MTHD_STRIPES 64
typedef struct {
  mthd_lock_t lock;
  mthd_hdr_t *head;
  size_t count;
} mthd_stripe_t;
extern MTHD_HIDDEN mthd_stripe_t mthd_stripes[MTHD_STRIPES];

/* ---- quarantine (quarantine.c) ---- */
MTHD_HIDDEN void mthd_quarantine_put(mthd_hdr_t *h);
MTHD_HIDDEN int mthd_quarantine_check(const char *when, uintptr_t caller);
MTHD_HIDDEN void mthd_quarantine_tick(uintptr_t caller);
MTHD_HIDDEN int mthd_pattern_check(mthd_hdr_t *h, const char *when, uintptr_t caller);
extern MTHD_HIDDEN mthd_lock_t mthd_quarantine_lock;
MTHD_HIDDEN mthd_hdr_t *mthd_quarantine_find(const void *addr);

/* ---- stacks (stackdepot.c) ---- */
#define MTHD_MAX_DEPTH 64
MTHD_HIDDEN int mthd_unwind(uintptr_t *pcs, int max, uintptr_t caller);
/* the cached CFI walk (unwind.c): return addresses above the caller, -1 where it cannot walk;
 * stack_hi: the end of this thread's stack, 0 if unknown */
MTHD_HIDDEN int mthd_unwind_cached(uintptr_t *pcs, int max, uintptr_t stack_hi);
MTHD_HIDDEN void mthd_unwind_forget(void);  /* code was unmapped: drop the cached rules */
/* walks tried by the cache, and those it gave to libgcc (MTHEAP_DEBUG=verbose prints them) */
MTHD_HIDDEN void mthd_unwind_counts(long *walks, long *declined);
MTHD_HIDDEN uint32_t mthd_stack_capture(uintptr_t caller);
MTHD_HIDDEN int mthd_stack_get(uint32_t id, const uintptr_t **pcs);
extern MTHD_HIDDEN mthd_lock_t mthd_depot_lock;
MTHD_HIDDEN void mthd_depot_range(uintptr_t *start, uintptr_t *end);
MTHD_HIDDEN bool mthd_pc_is_ours(uintptr_t pc);

/* ---- reports (report.c) ---- */
typedef struct {
  char buf[4096];
  size_t n;
  int fd;
} mthd_out_t;
MTHD_HIDDEN void mthd_out_init(mthd_out_t *o);
MTHD_HIDDEN void mthd_printf(mthd_out_t *o, const char *fmt, ...);
/* For reports of a write found later (at free, on a check): who wrote is unknown here, and which
 * mode would have stopped at the write. */
/* the writer of a corruption found after the fact is unknown: say so, and name the mode that
 * stops at the write (underflow: the guard page goes before the block) */
MTHD_HIDDEN void mthd_note_writer_unknown(mthd_out_t *o, const char *when, bool underflow);
MTHD_HIDDEN void mthd_vprintf(mthd_out_t *o, const char *fmt, va_list ap);
MTHD_HIDDEN void mthd_flush(mthd_out_t *o);
MTHD_HIDDEN void mthd_hexdump(mthd_out_t *o, const uint8_t *p, size_t n, uint8_t expect);
/* fault: pcs[0] is the faulting instruction (a signal's frame), not a return address */
MTHD_HIDDEN void mthd_print_stack(mthd_out_t *o, const uintptr_t *pcs, int n, bool fault);
MTHD_HIDDEN void mthd_print_stack_id(mthd_out_t *o, uint32_t id);
MTHD_HIDDEN void mthd_print_block(mthd_out_t *o, const mthd_hdr_t *h);
MTHD_HIDDEN void mthd_report_begin(mthd_out_t *o, const char *kind, const void *addr, const char *fmt, ...);
MTHD_HIDDEN void mthd_core_invalid(const char *what, const void *p, const char *why);
MTHD_HIDDEN void mthd_report_end(mthd_out_t *o, uintptr_t caller, const char *where);
MTHD_HIDDEN void mthd_describe_address(mthd_out_t *o, const void *addr);
MTHD_HIDDEN void mthd_sym_begin(void);
MTHD_HIDDEN bool mthd_sym_is_function(uintptr_t pc);
MTHD_HIDDEN void mthd_sym_end(void);
extern MTHD_HIDDEN _Atomic int mthd_errors;
MTHD_HIDDEN const char *mthd_family_alloc_name(int family, int flags);

/* ---- objects whose operator new/delete are not ours (foreign.c) ---- */
/* the family a malloc-family call from caller stands for: UNKNOWN or family */
MTHD_HIDDEN int mthd_foreign_family(uintptr_t caller, int family);
MTHD_HIDDEN void mthd_foreign_forget(void);
/* whether a block of alloc_family may be released by dealloc_family (aligned forms aside) */
MTHD_HIDDEN bool mthd_family_matches(int alloc_family, int dealloc_family);

/* ---- sampled guard pages (sample.c) ---- */
extern MTHD_HIDDEN uintptr_t mthd_pool_start, mthd_pool_end;
static inline bool mthd_in_pool(const void *p) {
  return (uintptr_t)p - mthd_pool_start < mthd_pool_end - mthd_pool_start;
}
MTHD_HIDDEN void mthd_sample_init(void);
MTHD_HIDDEN void *mthd_sample_alloc(size_t size, size_t align, int family, bool zero, uintptr_t caller);
MTHD_HIDDEN void mthd_sample_free(void *p, int family, const char *fn, uintptr_t caller);
MTHD_HIDDEN size_t mthd_sample_size(void *p, uintptr_t caller);
MTHD_HIDDEN void mthd_sample_install_handler(void);
/* live sampled blocks' slack, checked now; the number of errors reported */
MTHD_HIDDEN size_t mthd_sample_check(const char *fn, uintptr_t caller);
MTHD_HIDDEN long mthd_sample_next(void);

/* ---- leaks (leaks.c) ---- */
MTHD_HIDDEN int mthd_leak_check(void);

/* ---- fork (override.c) ---- */
MTHD_HIDDEN void mthd_fork_prepare(void);
MTHD_HIDDEN void mthd_fork_parent(void);
MTHD_HIDDEN void mthd_fork_child(void);
extern MTHD_HIDDEN mthd_lock_t mthd_pool_lock;

#endif
