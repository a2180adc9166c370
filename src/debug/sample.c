/* Sampled guard pages (MTHEAP_DEBUG=sample=N), for production: about one allocation in N is
 * placed in a pool slot, flush against an inaccessible page, so an overflow (or, placed the
 * other way, an underflow) faults on the faulting instruction; a freed slot is made
 * inaccessible too, so a use after free faults.  The SIGSEGV handler recognizes faults inside
 * the pool and reports them.
 *
 * Pool layout (one reservation; every page of a slot guarded from before its first use, see
 * arm_through, until its block is placed):
 *   [guard][slot 0: slot_pages data][guard][slot 1 ...][guard] ... [slot n-1][guard]
 * A block touches one of its two guards, chosen per block by sample_side (after: the default,
 * overflows fault; before: underflows fault; random: either, GWP-ASan's way, so a fleet finds
 * both).  Against the guard after it, a block sits as close to its slot's end as its alignment
 * allows: the natural alignment min(16, lowest set bit of size), raised to sample_align and to a
 * requested alignment.  sample_align defaults to 16, glibc's promise that real programs rely on
 * (perf crashes with 8-aligned blocks), so only sizes that are multiples of 16 end exactly at
 * the guard page; sample_align=1 gives GWP-ASan's natural alignment.  Against the guard before
 * it, a block starts at its slot's start (page-aligned, so every alignment holds).  Up to
 * SAMPLE_RZ bytes of slack on each side of the block hold MTHD_PAT_REDZONE and are checked at
 * free and at exit, so a write into the slack on the side away from the guard (a 1-byte
 * overflow of a 23-byte block, an underflow of a block placed after) is still reported, with
 * both stacks, only not on the instruction.  Filling the whole page instead was a third of a
 * sample's cost (a 4 KiB memset and its scan) for writes that land far from the block, which are
 * rare; a write that leaves the block's pages faults anyway (the slot's other pages are closed).
 *
 * A fault in the guard between slots i and i+1 belongs to whichever of the two live blocks is
 * nearer: slot i's block overflowed, or slot i+1's underflowed.
 *
 * Pages are opened and closed with guard markers (madvise MADV_GUARD_INSTALL/REMOVE, Linux
 * 6.13+) where the kernel has them, else with mprotect.  Markers live in the page tables: the
 * pool stays one mapping, where every mprotect of a slot splits or merges mappings under the
 * mmap lock taken for writing (the lock whose contention this project exists to avoid) and
 * costs half as much again (a sampled malloc+free measured 4.2 us against 6.8 us here).
 *
 * Invariants
 *   - the non-sampled path costs one TLS decrement (mthd_tls.sample_countdown): no lock, no
 *     stack capture, no global write;
 *   - slots move FREE -> LIVE -> FREED -> LIVE ...; free slots are reused oldest-freed first
 *     (FIFO), which keeps a freed slot inaccessible as long as possible;
 *   - a slot's open pages are exactly those its block (at least one byte of it) lies in
 *     (block_pages), from its placement to its free;
 *   - gen changes before every placement, so a reader that finds the same gen and state LIVE
 *     before and after copying a block's slack has copied that block's (mthd_sample_check);
 *   - the slot table lives in its own mmap (not in a root the leak checker scans) and the
 *     handler only reads it: everything the handler calls is async-signal-safe (write, mmap,
 *     open/read of ELF files, madvise, mprotect, sigaction), no stdio, no malloc, no locks.
 */
#include "mthd.h"

#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

enum { SLOT_FREE = 0, SLOT_LIVE = 1, SLOT_FREED = 2 };

typedef struct {
  _Atomic uint8_t state;
  uint8_t family, flags;
  bool before;              /* placed against the guard before the slot, not after it */
  _Atomic uint32_t gen;     /* placements of this slot so far */
  uintptr_t user;
  size_t size;
  uint32_t alloc_tid, free_tid;
  uint32_t alloc_stack, free_stack;   /* stack depot ids: a slot is 40 bytes, so guardpage's
                                         262144 slots (and their previous blocks) fit in 20 MiB */
} slot_t;

MTHD_HIDDEN uintptr_t mthd_pool_start, mthd_pool_end;
MTHD_HIDDEN mthd_lock_t mthd_pool_lock;
static slot_t *slots;
/* The block that held each slot before its current one (state SLOT_FREED; size 0: none), so a
 * fault into a reused slot that lies in the old block, not the new, is told as what it most
 * likely is: a use after free of the old block. */
static slot_t *prevs;
static uint32_t *freeq;   /* ring of free slot indices */
static size_t nslots, qhead, qcount;
static size_t page, slot_pages, unit;   /* unit = (slot_pages + 1) pages */

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#define MADV_GUARD_REMOVE 103
#endif
static bool use_markers;   /* guard markers, else mprotect */

/* Both are async-signal-safe (one syscall), for the handler's 'continue'. */
static int pages_open(uintptr_t a, size_t len) {
  return use_markers ? madvise((void *)a, len, MADV_GUARD_REMOVE) : mprotect((void *)a, len, PROT_READ | PROT_WRITE);
}
/* Markers also drop the pages' contents, so a closed slot holds no memory; with mprotect its
 * pages stay resident until the slot is reused. */
static int pages_close(uintptr_t a, size_t len) {
  return use_markers ? madvise((void *)a, len, MADV_GUARD_INSTALL) : mprotect((void *)a, len, PROT_NONE);
}

enum { SAMPLE_RZ = 64 };

static uintptr_t page_down(uintptr_t a) { return a & ~(uintptr_t)(page - 1); }
static uintptr_t page_up(uintptr_t a) { return (a + page - 1) & ~(uintptr_t)(page - 1); }
/* The pages a block at user of size bytes lies in (a 0-byte block: the page of its address). */
static void block_pages(uintptr_t user, size_t size, uintptr_t *lo, uintptr_t *hi) {
  *lo = page_down(user);
  *hi = page_up(user + (size ? size : 1));
}
/* The checked slack around a block: up to SAMPLE_RZ bytes on each side, within its pages (on
 * the guard's side that is what alignment left: 0-15 bytes, or more for a large alignment). */
static void block_slack(uintptr_t user, size_t size, uintptr_t *lo, uintptr_t *hi) {
  uintptr_t plo, phi;
  block_pages(user, size, &plo, &phi);
  *lo = user - plo > SAMPLE_RZ ? user - SAMPLE_RZ : plo;
  *hi = phi - (user + size) > SAMPLE_RZ ? user + size + SAMPLE_RZ : phi;
}
static uintptr_t slot_start(size_t i) { return mthd_pool_start + page + i * unit; }
static uintptr_t slot_end(size_t i) { return slot_start(i) + slot_pages * page; }

/* Slots [0, armed) have all their pages guarded (markers only; under mthd_pool_lock).  Slot i is
 * armed before it is used: the batch doubles, from 64 slots. */
static size_t armed;
static bool arm_through(size_t i) {
  if (!use_markers || i < armed) return true;
  size_t upto = armed + (armed < 64 ? 64 : armed);
  if (upto <= i) upto = i + 1;
  if (upto > nslots) upto = nslots;
  uintptr_t from = mthd_pool_start + page + armed * unit;
  if (madvise((void *)from, (upto - armed) * unit, MADV_GUARD_INSTALL) != 0) return false;
  armed = upto;
  return true;
}

void mthd_sample_init(void) {
  page = (size_t)sysconf(_SC_PAGESIZE);
  slot_pages = (mthd_opt.sample_max + page - 1) / page;
  if (slot_pages == 0) slot_pages = 1;
  unit = (slot_pages + 1) * page;
  nslots = mthd_opt.sample_slots;
  size_t total = page + nslots * unit;
  void *pool = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (pool == MAP_FAILED) {
    /* strict overcommit (vm.overcommit_memory=2) charges a writable reservation in full: an
     * inaccessible one is free, and mprotect opens slots one at a time */
    pool = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pool != MAP_FAILED) mthd_opt.sample_mprotect = true;
  }
  if (pool != MAP_FAILED) {
    /* every page a guard before its slot is first used; with markers the slots are armed in
     * growing batches as the free queue (in index order at first) reaches them, since guarding
     * all of a 65536-slot pool up front filled 9 MiB of page tables and cost every process
     * (git runs a dozen) a tenth of a second; a kernel without markers gets PROT_NONE at once
     * (one protection change, no page tables) */
    use_markers = !mthd_opt.sample_mprotect && madvise(pool, page, MADV_GUARD_INSTALL) == 0;
    if (!use_markers && mprotect(pool, total, PROT_NONE) != 0) {
      munmap(pool, total);
      pool = MAP_FAILED;
    }
  }
  size_t meta = 2 * nslots * sizeof(slot_t) + nslots * sizeof(uint32_t);
  void *m = mmap(NULL, meta, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pool == MAP_FAILED || m == MAP_FAILED) {
    /* never silently: the user asked for guard pages and gets none */
    mthd_out_t o;
    mthd_out_init(&o);
    mthd_printf(&o, "==%d== mtheap-debug: warning: cannot reserve %zu MiB for %zu guard-page slots; sampling is off "
                    "(fewer sample_slots or a smaller sample_max need less)\n", (int)getpid(), total >> 20, nslots);
    mthd_flush(&o);
    if (pool != MAP_FAILED) munmap(pool, total);
    if (m != MAP_FAILED) munmap(m, meta);
    return;
  }
  slots = m;
  prevs = slots + nslots;
  freeq = (uint32_t *)(prevs + nslots);
  for (size_t i = 0; i < nslots; i++) freeq[i] = (uint32_t)i;
  qhead = 0;
  qcount = nslots;
  mthd_pool_start = (uintptr_t)pool;
  mthd_pool_end = (uintptr_t)pool + total;
}

/* xorshift64 per thread: the sampling gaps and, with sample_side=random, the sides */
static uint64_t tls_rng(void) {
  uint64_t x = mthd_tls.rng;
  if (x == 0) x = ((uint64_t)mthd_tid() << 32) ^ (uint64_t)(uintptr_t)&x ^ 0x9E3779B97F4A7C15ull;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  mthd_tls.rng = x;
  return x;
}

long mthd_sample_next(void) {
  long n = mthd_opt.sample;
  if (n <= 1) return 1;
  return 1 + (long)(tls_rng() % (uint64_t)(2 * n - 1));   /* mean n */
}

void *mthd_sample_alloc(size_t size, size_t align, int family, bool zero, uintptr_t caller) {
  if (!slots || size > slot_pages * page || align > page) return NULL;
  mthd_lock(&mthd_pool_lock);
  if (qcount == 0) {
    mthd_unlock(&mthd_pool_lock);
    return NULL;
  }
  size_t i = freeq[qhead];
  if (!arm_through(i)) {
    mthd_unlock(&mthd_pool_lock);
    return NULL;
  }
  qhead = (qhead + 1) % nslots;
  qcount--;
  mthd_unlock(&mthd_pool_lock);
  slot_t *s = &slots[i];
  bool before = mthd_opt.sample_side == MTHD_SIDE_BEFORE ||
                (mthd_opt.sample_side == MTHD_SIDE_RANDOM && (tls_rng() >> 32 & 1));
  uintptr_t user;
  if (before) {
    user = slot_start(i);
  } else {
    size_t a = size ? (size_t)1 << __builtin_ctzl(size) : 16;
    if (a > 16) a = 16;
    if (a < mthd_opt.sample_align) a = mthd_opt.sample_align;
    if (a < align) a = align;
    /* a 0-byte block still gets an address inside the slot (a write to it lands in the slack) */
    user = (slot_end(i) - (size ? size : 1)) & ~(uintptr_t)(a - 1);
  }
  uintptr_t plo, phi, rlo, rhi;
  block_pages(user, size, &plo, &phi);
  block_slack(user, size, &rlo, &rhi);
  if (pages_open(plo, phi - plo) != 0) return NULL;
  memset((void *)rlo, MTHD_PAT_REDZONE, rhi - rlo);
  memset((void *)user, zero ? 0 : MTHD_PAT_ALLOC, size);
  if (atomic_load_explicit(&s->state, memory_order_relaxed) == SLOT_FREED) memcpy(&prevs[i], s, sizeof *s);
  atomic_fetch_add_explicit(&s->gen, 1, memory_order_relaxed);
  s->family = (uint8_t)family;
  s->flags = 0;
  s->before = before;
  s->user = user;
  s->size = size;
  s->alloc_tid = mthd_tid();
  s->free_tid = 0;
  s->free_stack = 0;
  s->alloc_stack = mthd_stack_capture(caller);
  atomic_store_explicit(&s->state, SLOT_LIVE, memory_order_release);
  return (void *)user;
}

static size_t slot_index(uintptr_t a, bool *in_guard) {
  size_t rel = a - mthd_pool_start;
  if (rel < page) {
    *in_guard = true;
    return 0;
  }
  rel -= page;
  *in_guard = rel % unit >= slot_pages * page;
  return rel / unit;
}

static void print_slot(mthd_out_t *o, slot_t *s) {
  size_t idx = (size_t)(s >= prevs && s < prevs + nslots ? s - prevs : s - slots);
  mthd_printf(o, "  block %p..%p (%zu bytes, %s, sampled: guard page %s it at %p) allocated by thread %u at:\n",
              (void *)s->user, (void *)(s->user + s->size), s->size, mthd_family_alloc_name(s->family, s->flags),
              s->before ? "before" : "after", (void *)(s->before ? slot_start(idx) - page : slot_end(idx)), s->alloc_tid);
  mthd_print_stack_id(o, s->alloc_stack);
  if (atomic_load(&s->state) == SLOT_FREED) {
    mthd_printf(o, "  freed by thread %u at:\n", s->free_tid);
    mthd_print_stack_id(o, s->free_stack);
  }
}

static slot_t *slot_of_user(void *p, const char *fn, uintptr_t caller) {
  bool guard;
  size_t i = slot_index((uintptr_t)p, &guard);
  slot_t *s = i < nslots ? &slots[i] : NULL;
  uint8_t st = s ? atomic_load(&s->state) : SLOT_FREE;
  if (s && !guard && st == SLOT_LIVE && s->user == (uintptr_t)p) return s;
  mthd_out_t o;
  if (s && !guard && st == SLOT_FREED && s->user == (uintptr_t)p) {
    bool re = !strcmp(fn, "realloc");
    mthd_report_begin(&o, re ? "use-after-free" : "double-free", p, "(%s() of a %zu-byte block freed before)", fn, s->size);
  } else if (s && !guard && st != SLOT_FREE && (uintptr_t)p > s->user && (uintptr_t)p < s->user + s->size) {
    mthd_report_begin(&o, "bad-free", p, "(%s() of a pointer %zu bytes inside a %zu-byte block)", fn,
                      (size_t)((uintptr_t)p - s->user), s->size);
  } else {
    mthd_report_begin(&o, "bad-free", p, "(%s() of a pointer malloc never returned, inside the sample pool)", fn);
    s = NULL;
  }
  if (s) print_slot(&o, s);
  mthd_report_end(&o, caller, fn);
  return NULL;
}

/* The slack around slot s's block, read in place or from a copy (lower slack then upper, as
 * mthd_sample_check lays them out): a write there is reported with both stacks.  1 if found. */
static size_t slack_check(slot_t *s, const uint8_t *copy, const char *fn, uintptr_t caller) {
  uintptr_t rlo, rhi, end = s->user + s->size;
  block_slack(s->user, s->size, &rlo, &rhi);
  size_t nlo = s->user - rlo, nhi = rhi - end;
  const uint8_t *lo = copy ? copy : (const uint8_t *)rlo, *hi = copy ? copy + nlo : (const uint8_t *)end;
  size_t before = mthd_scan_pattern(lo, nlo, MTHD_PAT_REDZONE);
  size_t after = mthd_scan_pattern(hi, nhi, MTHD_PAT_REDZONE);
  if (before == nlo && after == nhi) return 0;
  mthd_out_t o;
  bool over = after < nhi;
  uintptr_t a = over ? end + after : rlo + before;
  size_t dist = over ? (size_t)(a - end + 1) : (size_t)(s->user - a);
  mthd_report_begin(&o, over ? "heap-buffer-overflow" : "heap-buffer-underflow", (void *)a, "(%zu byte%s %s a %zu-byte block)",
                    dist, dist == 1 ? "" : "s", over ? "past" : "before", s->size);
  mthd_printf(&o, "  WRITE into the slack of a sampled block, found at %s%s\n", fn, copy ? " (the block is live)" : "");
  /* the guard is on the other side: say which placement would have stopped the writer */
  if (over == s->before)
    mthd_printf(&o, "  (the block touched the guard page %s it; MTHEAP_DEBUG=...,sample_side=%s faults on the write itself)\n",
                s->before ? "before" : "after", s->before ? "after" : "before");
  if (over) mthd_hexdump(&o, hi, nhi < 64 ? nhi : 64, MTHD_PAT_REDZONE);
  print_slot(&o, s);
  mthd_report_end(&o, caller, fn);
  return 1;
}

size_t mthd_sample_size(void *p, uintptr_t caller) {
  slot_t *s = slot_of_user(p, "malloc_usable_size", caller);
  return s ? s->size : (size_t)-1;
}

void mthd_sample_free(void *p, int family, const char *fn, uintptr_t caller) {
  slot_t *s = slot_of_user(p, fn, caller);
  if (!s) return;
  uint8_t expect = SLOT_LIVE;
  if (!atomic_compare_exchange_strong(&s->state, &expect, SLOT_FREED)) {
    slot_of_user(p, fn, caller);  /* lost a race with another free: report it */
    return;
  }
  size_t i = (size_t)(s - slots);
  s->free_tid = mthd_tid();
  s->free_stack = mthd_stack_capture(caller);
  if (!mthd_family_matches(s->family, family)) {  /* new/delete mixed up: known for sampled blocks too */
    mthd_out_t o;
    mthd_report_begin(&o, "alloc-dealloc-mismatch", p, "(%s vs %s)", mthd_family_alloc_name(s->family, 0), fn);
    print_slot(&o, s);
    mthd_report_end(&o, caller, fn);
  }
  slack_check(s, NULL, fn, caller);
  uintptr_t plo, phi;
  block_pages(s->user, s->size, &plo, &phi);
  pages_close(plo, phi - plo);
  mthd_lock(&mthd_pool_lock);
  freeq[(qhead + qcount) % nslots] = (uint32_t)i;
  qcount++;
  mthd_unlock(&mthd_pool_lock);
}

/* Live blocks' slack now (at exit, and from mtheap_check_heap): a write there by a block never
 * freed is found too.  Another thread may free and close a slot while we look, so the slack is
 * copied with process_vm_readv (an unreadable page is an error code, not a fault) and kept only
 * if the slot still holds the same placement afterwards. */
size_t mthd_sample_check(const char *fn, uintptr_t caller) {
  if (!slots) return 0;
  size_t errors = 0, upto = use_markers ? armed : nslots;
  uint8_t copy[2 * SAMPLE_RZ];  /* block_slack: at most SAMPLE_RZ a side */
  for (size_t i = 0; i < upto; i++) {
    slot_t *s = &slots[i];
    if (atomic_load_explicit(&s->state, memory_order_acquire) != SLOT_LIVE) continue;
    uint32_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed);
    uintptr_t rlo, rhi;
    block_slack(s->user, s->size, &rlo, &rhi);
    size_t nlo = s->user - rlo, nhi = rhi - s->user - s->size;
    struct iovec local[2] = {{copy, nlo}, {copy + nlo, nhi}};
    struct iovec remote[2] = {{(void *)rlo, nlo}, {(void *)(s->user + s->size), nhi}};
    ssize_t got = process_vm_readv(getpid(), local, 2, remote, 2, 0);
    atomic_thread_fence(memory_order_acquire);
    if (got != (ssize_t)(nlo + nhi) || atomic_load_explicit(&s->state, memory_order_relaxed) != SLOT_LIVE ||
        atomic_load_explicit(&s->gen, memory_order_relaxed) != gen)
      continue;
    errors += slack_check(s, copy, fn, caller);
  }
  return errors;
}

/* ---- the fault handler ---- */

static struct sigaction prev_segv;

static bool readable(uintptr_t a) {
  unsigned char v;
  return mincore((void *)(a & ~(uintptr_t)4095), 1, &v) == 0;
}

/* The faulting thread's stack by its unwind tables (CFI), through the signal frame: libc's
 * string and stdio functions have no frame pointers, so a frame-pointer walk from a fault in
 * memcpy under sprintf stops inside libc.  The walk starts in this handler; frames before the
 * faulting pc are dropped. */
struct cfi_walk {
  uintptr_t *pcs, fault;
  int n, max;
  bool found;
};

static _Unwind_Reason_Code cfi_cb(struct _Unwind_Context *ctx, void *arg) {
  struct cfi_walk *w = arg;
  int before = 0;
  uintptr_t ip = (uintptr_t)_Unwind_GetIPInfo(ctx, &before);
  if (ip == 0) return _URC_END_OF_STACK;
  if (!w->found) {
    if (ip != w->fault) return _URC_NO_REASON;
    w->found = true;
  }
  if (mthd_pc_is_ours(ip)) return _URC_NO_REASON;
  w->pcs[w->n++] = ip;
  return w->n >= w->max ? _URC_END_OF_STACK : _URC_NO_REASON;
}

static int cfi_stack(uintptr_t fault, uintptr_t *pcs, int max) {
  struct cfi_walk w = {pcs, fault, 0, max, false};
  _Unwind_Backtrace(cfi_cb, &w);
  return w.found ? w.n : 0;
}

/* Whose fault at a (in the pool) is: *s the block (NULL: none), *i its slot, *dist how far
 * outside it (0 inside), and the kind.  In a guard page, the nearer of the live blocks on its
 * two sides; in a slot, the slot's block (or the block it held before, when a falls there). */
static const char *fault_owner(uintptr_t a, slot_t **s, size_t *i, size_t *dist) {
  size_t rel = a - mthd_pool_start;
  *s = NULL;
  *i = 0;
  *dist = 0;
  bool guard = rel < page || (rel - page) % unit >= slot_pages * page;
  if (guard) {
    size_t g = rel < page ? 0 : (rel - page) / unit + 1;   /* the guard before slot g */
    size_t over = 0, under = 0;
    if (g >= 1 && g - 1 < nslots && atomic_load(&slots[g - 1].state) == SLOT_LIVE &&
        a >= slots[g - 1].user + slots[g - 1].size)
      over = a - slots[g - 1].user - slots[g - 1].size + 1;
    if (g < nslots && atomic_load(&slots[g].state) == SLOT_LIVE && a < slots[g].user) under = slots[g].user - a;
    if (!over && !under) return "wild-access";
    bool is_over = over && (!under || over <= under);
    *i = is_over ? g - 1 : g;
    *s = &slots[*i];
    *dist = is_over ? over : under;
    return is_over ? "heap-buffer-overflow" : "heap-buffer-underflow";
  }
  *i = (rel - page) / unit;
  if (*i >= nslots) return "wild-access";
  slot_t *cur = &slots[*i], *prev = &prevs[*i];
  uint8_t st = atomic_load(&cur->state);
  if (st == SLOT_FREED) {
    *s = cur;
    return "use-after-free";
  }
  if (st != SLOT_LIVE) return "wild-access";
  /* inside the slot's previous block, outside the current one: that block was freed and its
   * slot given to another; an underflow or overflow of the new block is the other reading */
  if (prev->size && a >= prev->user && a < prev->user + prev->size) {
    *s = prev;
    return "use-after-free";
  }
  *s = cur;
  if (a < cur->user) {
    *dist = cur->user - a;
    return "heap-buffer-underflow";
  }
  *dist = a - cur->user - cur->size + 1;
  return "heap-buffer-overflow";
}

static void segv_handler(int sig, siginfo_t *si, void *ucv) {
  uintptr_t a = (uintptr_t)si->si_addr;
  if (!mthd_in_pool((void *)a) || !slots) {
    /* not ours: hand it to whoever was there before us (or the default action) */
    sigaction(SIGSEGV, &prev_segv, NULL);
    return;
  }
  ucontext_t *uc = ucv;
  uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
  uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
  uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
  bool write_ = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
  size_t i;
  slot_t *s;
  size_t dist;
  const char *kind = fault_owner(a, &s, &i, &dist);
  mthd_out_t o;
  mthd_out_init(&o);
  mthd_printf(&o, "==%d== mtheap-debug: %s on address %p ", (int)getpid(), kind, (void *)a);
  if (s && dist) {
    bool over = kind[12] == 'o';  /* heap-buffer-overflow, not -underflow */
    mthd_printf(&o, "(%zu byte%s %s a %zu-byte block) [sampled guard page]\n", dist, dist == 1 ? "" : "s",
                over ? "past" : "before", s->size);
  } else if (s && i < nslots && s == &prevs[i]) {
    mthd_printf(&o, "(%zu bytes into a freed %zu-byte block, whose slot now holds another) [sampled guard page]\n",
                (size_t)(a - s->user), s->size);
  } else if (s) {
    mthd_printf(&o, "(%zu bytes into a freed %zu-byte block) [sampled guard page]\n", (size_t)(a - s->user), s->size);
  } else {
    mthd_printf(&o, "(inside the guarded sample pool, near no live or freed block)\n");
  }
  mthd_printf(&o, "  %s of memory at %p caught by the guard page, SIGSEGV in thread %u at:\n", write_ ? "WRITE" : "READ",
              (void *)a, mthd_tid());
  /* the faulting instruction, then a frame-pointer walk that checks each frame is mapped */
  uintptr_t pcs[MTHD_MAX_DEPTH];
  int n = 0;
  pcs[n++] = pc;
  /* a frameless leaf (memcpy, strcpy: the usual culprits) keeps its return address at the
   * stack pointer, where the frame-pointer walk cannot see it */
  uintptr_t at_sp = readable(sp) && !(sp & 7) ? *(uintptr_t *)sp : 0;
  if (at_sp > 4096 && mthd_sym_is_function(at_sp)) pcs[n++] = at_sp;
  while (n < mthd_opt.depth && fp >= sp && fp - sp < ((uintptr_t)64 << 20) && !(fp & 7) && readable(fp) &&
         readable(fp + 15)) {
    uintptr_t next = ((uintptr_t *)fp)[0], ret = ((uintptr_t *)fp)[1];
    if (ret < 4096) break;
    if (!(n == 2 && ret == pcs[1])) pcs[n++] = ret;
    if (next <= fp) break;
    fp = next;
  }
  uintptr_t cfi[MTHD_MAX_DEPTH];
  int ncfi = cfi_stack(pc, cfi, mthd_opt.depth);
  if (ncfi > n) {
    memcpy(pcs, cfi, (size_t)ncfi * sizeof cfi[0]);
    n = ncfi;
  }
  mthd_print_stack(&o, pcs, n, true);
  if (s) print_slot(&o, s);
  if (s && i < nslots && s == &prevs[i]) {
    slot_t *cur = &slots[i];
    bool below = a < cur->user;
    mthd_printf(&o, "  the slot now holds a %zu-byte block at %p (the address is %zu bytes %s it: read as %s of it, "
                    "this would be a heap-buffer-%s):\n", cur->size, (void *)cur->user,
                (size_t)(below ? cur->user - a : a - cur->user - cur->size + 1), below ? "before" : "past",
                below ? "an underflow" : "an overflow", below ? "underflow" : "overflow");
    print_slot(&o, &slots[i]);
  }
  atomic_fetch_add(&mthd_errors, 1);
  if (mthd_opt.cont) {
    mthd_printf(&o, "==%d== mtheap-debug: continuing ('continue' is set): the page is made accessible\n", (int)getpid());
    mthd_flush(&o);
    pages_open(a & ~(uintptr_t)(page - 1), page);
    return;
  }
  mthd_printf(&o, "==%d== mtheap-debug: re-raising SIGSEGV\n", (int)getpid());
  mthd_flush(&o);
  /* returning re-executes the access, which now meets the default action (and a core dump
   * shows the faulting instruction) */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigaction(SIGSEGV, &dfl, NULL);
  (void)sig;
}

void mthd_sample_install_handler(void) {
  if (!slots) return;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = segv_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &prev_segv);
}
