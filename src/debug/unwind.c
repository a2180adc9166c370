/* The CFI unwinder with a rule cache: call stacks from the unwind tables at a few loads a frame.
 *
 * libgcc's _Unwind_Backtrace finds and interprets a frame's unwind table (its FDE) again on
 * every call, a few hundred nanoseconds per frame; `full` captures two stacks per block, and
 * that was three quarters of its time.  On x86-64, compiled code states almost every frame in
 * one of two shapes: the CFA (the caller's stack pointer) is rsp + N or rbp + N, the return
 * address is at CFA - 8, and the caller's rbp is either untouched or saved at CFA + M.  This
 * file interprets an FDE once per return address, keeps (register, N, M) in a lock-free table
 * and walks later stacks with three or four loads per frame.
 *
 * Invariants
 *   - a cached rule is what the FDE says at that address, never a guess from the stack: the
 *     same frames as libgcc's walk (tests/test_unwind.c compares the two);
 *   - whatever a rule cannot express (signal frames, DWARF expressions, a CFA in another
 *     register as in stack-realigning prologues, return addresses not at CFA - 8) makes the
 *     walk return -1, and the caller uses libgcc for that stack;
 *   - a table slot goes from empty to a key once, and its rule from 0 to the rule once, by the
 *     thread that claimed the key: a reader that finds its key with rule 0 computes the rule
 *     itself.  No entry is ever overwritten, so no reader can see another address's rule;
 *   - code can be unmapped and other code mapped at the same address: dlclose (override.c)
 *     calls mthd_unwind_forget(), which starts a new, empty table.  The old one stays mapped (a
 *     walk may still be reading it); after UW_TABLES tables the cache is off and every walk
 *     uses libgcc;
 *   - the walk never calls malloc, and each step must move the CFA towards older frames by at
 *     most UW_MAX_FRAME bytes and stay inside the thread's stack when its end is known, or the
 *     walk gives up (-1) before reading there: a rule that does not fit this stack (code
 *     unmapped behind the library's back, by glibc's own dlclose of NSS or iconv modules) can
 *     make a stack wrong but not fault.
 */
#include "mthd.h"

#include <dlfcn.h>
#include <string.h>
#include <sys/mman.h>
#include <unwind.h>

/* libgcc's FDE lookup (exported by libgcc_s since GCC 3.0; glibc's _dl_find_object behind it) */
struct dwarf_eh_bases {
  void *tbase, *dbase, *func;
};
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

#define UW_SLOTS ((size_t)1 << 16)
#define UW_PROBES 16
#define UW_TABLES 16
#define UW_MAX_FRAME ((uintptr_t)1 << 20)

/* x86-64 DWARF register numbers */
enum { UW_RBP = 6, UW_RSP = 7, UW_RA = 16 };

/* a rule, packed: 0 = not computed yet */
enum {
  UW_OK = 1,         /* computed */
  UW_FALLBACK = 2,   /* cannot be expressed: use libgcc for this stack */
  UW_END = 4,        /* outermost frame (return address undefined) or no unwind table */
  UW_CFA_RBP = 8,    /* CFA = rbp + off, else rsp + off */
  UW_RBP_SAVED = 16, /* caller's rbp at CFA + rbp_off, else unchanged */
};
#define UW_CFA_OFF(r) ((int32_t)((r) >> 32))
#define UW_RBP_OFF(r) ((int16_t)((r) >> 16))

typedef struct {
  _Atomic uintptr_t key;
  _Atomic uint64_t rule;
} uw_slot_t;

static _Atomic(uw_slot_t *) uw_table;
static _Atomic long uw_walks, uw_declined;
/* walks are counted per thread and added to uw_walks 64 at a time: a shared counter bumped on
 * every capture would be a contended cache line in every multithreaded program */
#define UW_WALKS_BATCH 64
static __thread unsigned uw_walks_mine __attribute__((tls_model("initial-exec")));
static _Atomic int uw_tables_made;
static _Atomic bool uw_off;

/* ---- the unwind table reader: one FDE, interpreted up to one address ---- */

typedef struct {
  const uint8_t *p, *end;
  bool bad;
} uw_rd_t;

static uint64_t rd_uleb(uw_rd_t *r) {
  uint64_t v = 0;
  for (int shift = 0; r->p < r->end; shift += 7) {
    uint8_t b = *r->p++;
    if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  r->bad = true;
  return 0;
}

static int64_t rd_sleb(uw_rd_t *r) {
  int64_t v = 0;
  int shift = 0;
  while (r->p < r->end) {
    uint8_t b = *r->p++;
    if (shift < 64) v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
    shift += 7;
    if (!(b & 0x80)) {
      if (shift < 64 && (b & 0x40)) v |= -((int64_t)1 << shift);
      return v;
    }
  }
  r->bad = true;
  return 0;
}

static uint64_t rd_fixed(uw_rd_t *r, int n) {
  if (r->end - r->p < n) {
    r->bad = true;
    return 0;
  }
  uint64_t v = 0;
  memcpy(&v, r->p, (size_t)n);  /* little endian */
  r->p += n;
  return v;
}

/* skip a pointer in DW_EH_PE encoding `enc` (only its size matters here) */
static void rd_skip_encoded(uw_rd_t *r, uint8_t enc) {
  if (enc == 0xff) return;  /* DW_EH_PE_omit */
  switch (enc & 0x0f) {
    case 0x00: rd_fixed(r, 8); break;           /* absptr */
    case 0x01: rd_uleb(r); break;
    case 0x02: case 0x0a: rd_fixed(r, 2); break;
    case 0x03: case 0x0b: rd_fixed(r, 4); break;
    case 0x04: case 0x0c: rd_fixed(r, 8); break;
    case 0x09: rd_sleb(r); break;
    default: r->bad = true;
  }
}

/* how one register is recovered */
enum { REG_SAME, REG_UNDEF, REG_OFFSET, REG_OTHER };
typedef struct {
  uint8_t how;
  int64_t off;
} uw_reg_t;

/* the row of the CFA table: what we track of it */
typedef struct {
  uint64_t cfa_reg;
  int64_t cfa_off;
  bool cfa_expr;
  uw_reg_t rbp, ra;
} uw_row_t;

typedef struct {
  int64_t code_align, data_align;
  uint64_t ra_reg;
  uint8_t fde_enc;
  bool signal;
} uw_cie_t;

static uw_reg_t *row_reg(uw_row_t *row, const uw_cie_t *cie, uint64_t reg) {
  if (reg == UW_RBP) return &row->rbp;
  if (reg == cie->ra_reg) return &row->ra;
  return NULL;
}

/* Run CFA instructions [p, end) until the location passes `target` (if limit).  Returns false
 * for anything this reader does not know. */
static bool uw_run(uw_rd_t *r, const uw_cie_t *cie, uw_row_t *row, const uw_row_t *init,
                   uintptr_t loc, uintptr_t target, bool limit) {
  uw_row_t stack[8];
  int depth = 0;
  while (r->p < r->end && !r->bad) {
    uint8_t op = *r->p++;
    uint64_t reg = op & 0x3f, adv = 0;
    int64_t off;
    uw_reg_t *x;
    switch (op >> 6) {
      case 1: adv = reg * (uint64_t)cie->code_align; goto advance;
      case 2:
        off = (int64_t)rd_uleb(r) * cie->data_align;
        if ((x = row_reg(row, cie, reg))) *x = (uw_reg_t){REG_OFFSET, off};
        continue;
      case 3:
        if ((x = row_reg(row, cie, reg))) *x = *row_reg((uw_row_t *)init, cie, reg);
        continue;
    }
    switch (op) {
      case 0x00: continue;                                   /* nop */
      case 0x02: adv = rd_fixed(r, 1) * (uint64_t)cie->code_align; goto advance;
      case 0x03: adv = rd_fixed(r, 2) * (uint64_t)cie->code_align; goto advance;
      case 0x04: adv = rd_fixed(r, 4) * (uint64_t)cie->code_align; goto advance;
      case 0x05:                                             /* offset_extended */
        reg = rd_uleb(r);
        off = (int64_t)rd_uleb(r) * cie->data_align;
        if ((x = row_reg(row, cie, reg))) *x = (uw_reg_t){REG_OFFSET, off};
        continue;
      case 0x11:                                             /* offset_extended_sf */
        reg = rd_uleb(r);
        off = rd_sleb(r) * cie->data_align;
        if ((x = row_reg(row, cie, reg))) *x = (uw_reg_t){REG_OFFSET, off};
        continue;
      case 0x2f:                                             /* GNU_negative_offset_extended */
        reg = rd_uleb(r);
        off = -(int64_t)rd_uleb(r) * cie->data_align;
        if ((x = row_reg(row, cie, reg))) *x = (uw_reg_t){REG_OFFSET, off};
        continue;
      case 0x06:                                             /* restore_extended */
        reg = rd_uleb(r);
        if ((x = row_reg(row, cie, reg))) *x = *row_reg((uw_row_t *)init, cie, reg);
        continue;
      case 0x07:                                             /* undefined */
        if ((x = row_reg(row, cie, rd_uleb(r)))) *x = (uw_reg_t){REG_UNDEF, 0};
        continue;
      case 0x08:                                             /* same_value */
        if ((x = row_reg(row, cie, rd_uleb(r)))) *x = (uw_reg_t){REG_SAME, 0};
        continue;
      case 0x09:                                             /* register */
        reg = rd_uleb(r);
        rd_uleb(r);
        if ((x = row_reg(row, cie, reg))) *x = (uw_reg_t){REG_OTHER, 0};
        continue;
      case 0x14: case 0x15:                                  /* val_offset(_sf) */
        reg = rd_uleb(r);
        if (op == 0x14) rd_uleb(r); else rd_sleb(r);
        if ((x = row_reg(row, cie, reg))) *x = (uw_reg_t){REG_OTHER, 0};
        continue;
      case 0x10: case 0x16: {                                /* (val_)expression */
        reg = rd_uleb(r);
        uint64_t len = rd_uleb(r);
        if (len > (uint64_t)(r->end - r->p)) return false;
        r->p += len;
        if ((x = row_reg(row, cie, reg))) *x = (uw_reg_t){REG_OTHER, 0};
        continue;
      }
      case 0x0a:                                             /* remember_state: the whole row */
        if (depth == 8) return false;
        stack[depth++] = *row;
        continue;
      case 0x0b:                                             /* restore_state */
        if (depth == 0) return false;
        *row = stack[--depth];
        continue;
      case 0x0c:                                             /* def_cfa */
        row->cfa_reg = rd_uleb(r);
        row->cfa_off = (int64_t)rd_uleb(r);
        row->cfa_expr = false;
        continue;
      case 0x12:                                             /* def_cfa_sf */
        row->cfa_reg = rd_uleb(r);
        row->cfa_off = rd_sleb(r) * cie->data_align;
        row->cfa_expr = false;
        continue;
      case 0x0d: row->cfa_reg = rd_uleb(r); continue;        /* def_cfa_register */
      case 0x0e: row->cfa_off = (int64_t)rd_uleb(r); continue;
      case 0x13: row->cfa_off = rd_sleb(r) * cie->data_align; continue;
      case 0x0f: {                                           /* def_cfa_expression */
        uint64_t len = rd_uleb(r);
        if (len > (uint64_t)(r->end - r->p)) return false;
        r->p += len;
        row->cfa_expr = true;
        continue;
      }
      case 0x2e: rd_uleb(r); continue;                       /* GNU_args_size */
      default: return false;                                 /* set_loc and anything newer */
    }
  advance:
    loc += adv;
    if (limit && loc > target) break;
  }
  return !r->bad;
}

/* The rule for return address `ra` (the frame that will resume there): the row in effect at
 * ra - 1, the call instruction, as libgcc does for every frame but signal frames. */
static uint64_t uw_rule_compute(uintptr_t ra) {
  uintptr_t target = ra - 1;
  struct dwarf_eh_bases bases;
  mthd_tls.busy++;
  const uint8_t *fde = _Unwind_Find_FDE((void *)target, &bases);
  mthd_tls.busy--;
  if (!fde) {
    /* the kernel's signal return (glibc's __restore_rt: mov $15,%rax; syscall) has its own
     * frame layout that libgcc knows; anything else without a table ends the stack */
    static const uint8_t sigreturn[9] = {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05};
    Dl_info di;  /* read the bytes only where an object is mapped (not in JIT code) */
    if (dladdr((void *)ra, &di) && !memcmp((const void *)ra, sigreturn, sizeof sigreturn))
      return UW_OK | UW_FALLBACK;
    return UW_OK | UW_END;
  }
  uint32_t len;
  memcpy(&len, fde, 4);
  if (len == 0xffffffffu || len < 8) return UW_OK | UW_FALLBACK;
  uint32_t cie_delta;
  memcpy(&cie_delta, fde + 4, 4);
  const uint8_t *cie_p = fde + 4 - cie_delta;
  uint32_t cie_len;
  memcpy(&cie_len, cie_p, 4);
  if (cie_len == 0xffffffffu || cie_len < 8) return UW_OK | UW_FALLBACK;

  /* the CIE: version, augmentation, alignment factors, return address column, encodings */
  uw_cie_t cie = {.fde_enc = 0};
  uw_rd_t r = {cie_p + 8, cie_p + 4 + cie_len, false};
  uint8_t version = (uint8_t)rd_fixed(&r, 1);
  const char *aug = (const char *)r.p;
  size_t aug_n = strnlen(aug, (size_t)(r.end - r.p));
  r.p += aug_n + 1;
  if (version != 1 && version != 3) return UW_OK | UW_FALLBACK;
  cie.code_align = (int64_t)rd_uleb(&r);
  cie.data_align = rd_sleb(&r);
  cie.ra_reg = version == 1 ? rd_fixed(&r, 1) : rd_uleb(&r);
  const uint8_t *cie_insns = r.p;
  if (aug_n && aug[0] == 'z') {
    uint64_t alen = rd_uleb(&r);
    if (alen > (uint64_t)(r.end - r.p)) return UW_OK | UW_FALLBACK;
    cie_insns = r.p + alen;
    for (size_t i = 1; i < aug_n && !r.bad; i++) {
      switch (aug[i]) {
        case 'R': cie.fde_enc = (uint8_t)rd_fixed(&r, 1); break;
        case 'L': rd_fixed(&r, 1); break;
        case 'P': {
          uint8_t penc = (uint8_t)rd_fixed(&r, 1);
          rd_skip_encoded(&r, penc);
          break;
        }
        case 'S': cie.signal = true; break;
        default: return UW_OK | UW_FALLBACK;  /* unknown augmentation */
      }
    }
  } else if (aug_n) {
    return UW_OK | UW_FALLBACK;                /* "eh" and other old forms */
  }
  if (r.bad || cie.signal || cie.ra_reg != UW_RA) return UW_OK | UW_FALLBACK;

  /* the CIE's initial instructions give the row every FDE starts from */
  uw_row_t init = {.cfa_reg = UW_RSP, .rbp = {REG_SAME, 0}, .ra = {REG_SAME, 0}};
  r.p = cie_insns;
  if (!uw_run(&r, &cie, &init, &init, 0, 0, false)) return UW_OK | UW_FALLBACK;

  /* the FDE: skip its address range (the start is bases.func) and augmentation data */
  uw_rd_t f = {fde + 8, fde + 4 + len, false};
  rd_skip_encoded(&f, cie.fde_enc);
  rd_skip_encoded(&f, cie.fde_enc & 0x0f);
  if (aug_n && aug[0] == 'z') {
    uint64_t alen = rd_uleb(&f);
    if (alen > (uint64_t)(f.end - f.p)) return UW_OK | UW_FALLBACK;
    f.p += alen;
  }
  uw_row_t row = init;
  if (f.bad || !uw_run(&f, &cie, &row, &init, (uintptr_t)bases.func, target, true)) return UW_OK | UW_FALLBACK;

  if (row.ra.how == REG_UNDEF) return UW_OK | UW_END;
  if (row.cfa_expr || (row.cfa_reg != UW_RSP && row.cfa_reg != UW_RBP) || row.ra.how != REG_OFFSET ||
      row.ra.off != -8 || row.cfa_off <= 0 || row.cfa_off >= (int64_t)UW_MAX_FRAME)
    return UW_OK | UW_FALLBACK;
  uint64_t rule = UW_OK | ((uint64_t)(uint32_t)row.cfa_off << 32);
  if (row.cfa_reg == UW_RBP) rule |= UW_CFA_RBP;
  if (row.rbp.how == REG_OFFSET) {
    if (row.rbp.off < INT16_MIN || row.rbp.off > INT16_MAX) return UW_OK | UW_FALLBACK;
    rule |= UW_RBP_SAVED | ((uint64_t)(uint16_t)(int16_t)row.rbp.off << 16);
  } else if (row.rbp.how != REG_SAME) {
    return UW_OK | UW_FALLBACK;  /* rbp in another register, or undefined while rbp is the CFA */
  }
  return rule;
}

/* ---- the table ---- */

static uw_slot_t *uw_table_new(void) {
  int made = atomic_fetch_add(&uw_tables_made, 1);
  if (made >= UW_TABLES) {
    atomic_store(&uw_off, true);
    return NULL;
  }
  void *m = mmap(NULL, UW_SLOTS * sizeof(uw_slot_t), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) {
    atomic_store(&uw_off, true);
    return NULL;
  }
  return m;
}

void mthd_unwind_forget(void) {
  if (atomic_load(&uw_table) == NULL) return;  /* nothing cached yet */
  uw_slot_t *t = uw_table_new();
  atomic_store_explicit(&uw_table, t, memory_order_release);
}

static uint64_t uw_rule(uw_slot_t *t, uintptr_t ra) {
  size_t h = (size_t)((ra * 0x9E3779B97F4A7C15ull) >> 48) & (UW_SLOTS - 1);
  for (int i = 0; i < UW_PROBES; i++) {
    uw_slot_t *s = &t[(h + (size_t)i) & (UW_SLOTS - 1)];
    uintptr_t k = atomic_load_explicit(&s->key, memory_order_acquire);
    if (k == ra) {
      uint64_t rule = atomic_load_explicit(&s->rule, memory_order_acquire);
      return rule ? rule : uw_rule_compute(ra);  /* its owner is still computing it */
    }
    if (k == 0) {
      uintptr_t expect = 0;
      if (atomic_compare_exchange_strong(&s->key, &expect, ra)) {
        uint64_t rule = uw_rule_compute(ra);
        atomic_store_explicit(&s->rule, rule, memory_order_release);
        return rule;
      }
      if (expect == ra) return uw_rule_compute(ra);
    }
  }
  return uw_rule_compute(ra);  /* this neighbourhood is full: not cached */
}

void mthd_unwind_counts(long *walks, long *declined) {
  /* the other threads' last partial batches are not in it: up to 63 walks each */
  *walks = atomic_load_explicit(&uw_walks, memory_order_relaxed) + uw_walks_mine;
  *declined = atomic_load_explicit(&uw_declined, memory_order_relaxed);
}

static int uw_decline(void) {
  atomic_fetch_add_explicit(&uw_declined, 1, memory_order_relaxed);
  return -1;
}

/* The frames above our caller, return addresses as libgcc's _Unwind_GetIP reports them (our
 * caller's own return address first).  -1: a frame the cache cannot walk (use libgcc).
 * stack_hi: the end of this thread's stack if the caller knows it (0 if not); a CFA beyond it
 * means a rule does not fit this stack, and the walk gives up before reading there. */
__attribute__((noinline)) int mthd_unwind_cached(uintptr_t *pcs, int max, uintptr_t stack_hi) {
  if (MTHD_UNLIKELY(++uw_walks_mine == UW_WALKS_BATCH)) {
    atomic_fetch_add_explicit(&uw_walks, UW_WALKS_BATCH, memory_order_relaxed);
    uw_walks_mine = 0;
  }
  if (atomic_load_explicit(&uw_off, memory_order_relaxed)) return uw_decline();
  uw_slot_t *t = atomic_load_explicit(&uw_table, memory_order_acquire);
  if (MTHD_UNLIKELY(!t)) {
    uw_slot_t *fresh = uw_table_new(), *expect = NULL;
    if (!fresh) return uw_decline();
    if (!atomic_compare_exchange_strong(&uw_table, &expect, fresh)) munmap(fresh, UW_SLOTS * sizeof(uw_slot_t));
    t = atomic_load_explicit(&uw_table, memory_order_acquire);
    if (!t) return uw_decline();
  }
  uintptr_t pc, sp, bp;
  /* a point in this function and the registers there; the row at pc - 1 (inside the lea)
   * describes them, as no instruction between changes rsp or rbp */
  __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(pc), "=r"(sp), "=r"(bp));
  if (stack_hi <= sp) stack_hi = UINTPTR_MAX;  /* unknown, or on another stack (signal, fiber) */
  int n = 0;
  while (n < max) {
    uint64_t rule = uw_rule(t, pc);
    if (rule & UW_FALLBACK) return uw_decline();
    if (rule & UW_END) break;
    uintptr_t cfa = ((rule & UW_CFA_RBP) ? bp : sp) + (uintptr_t)(intptr_t)UW_CFA_OFF(rule);
    if (cfa <= sp || cfa - sp > UW_MAX_FRAME || (cfa & 7) || cfa > stack_hi) return uw_decline();
    if (rule & UW_RBP_SAVED) {
      uintptr_t at = cfa + (uintptr_t)(intptr_t)UW_RBP_OFF(rule);
      /* at == sp: rbp was the frame's last push before the call (common in -O2 code) */
      if (at < sp || at + 8 > stack_hi) return uw_decline();
      bp = *(const uintptr_t *)at;
    }
    pc = *(const uintptr_t *)(cfa - 8);
    sp = cfa;
    if (pc == 0) break;
    pcs[n++] = pc;
  }
  return n;
}
