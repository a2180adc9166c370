/* Guarded blocks: the header and redzones around every block (layout in mthd.h), the checks
 * done at free/realloc/on demand, and the registry of live blocks.
 *
 * Invariants
 *   - a header is trusted only if magic and check match: check hashes the header's address
 *     and the fields fixed at allocation, so a stale or forged header fails it;
 *   - state moves LIVE -> QUARANTINED -> RELEASED with a compare-and-swap from LIVE, so two
 *     threads freeing one block cannot both win: the loser reports a double free;
 *   - a LIVE block is on exactly one registry stripe list (h->stripe), under that stripe's
 *     lock; list links are only written through pointers read from a validated header;
 *   - with guards on, every byte of [core, header), [user - 16, user) and
 *     [user + size, user + size + min(tail, MTHD_RZ_CHECK)) holds MTHD_PAT_REDZONE while the
 *     block is live;
 *   - nothing here calls malloc: blocks come from mtheap_malloc/mtheap_memalign.
 */
#include "mthd.h"
#include "alloc.h"   /* the core's names: mth_usable_size, mth_why_double_free */

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define MTHD_RZ_CHECK 512    /* right-redzone bytes filled and checked at most */

MTHD_HIDDEN mthd_stripe_t mthd_stripes[MTHD_STRIPES];

uint16_t mthd_hdr_check(const mthd_hdr_t *h) {
  uint64_t x = (uint64_t)(uintptr_t)h * 0x9E3779B97F4A7C15ull;
  x ^= h->size + 0x632BE59BD9B4E019ull;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= ((uint64_t)h->pre << 20) ^ ((uint64_t)h->family << 8) ^ h->align_log2;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return (uint16_t)(x ^ (x >> 16) ^ (x >> 32) ^ (x >> 48));
}

bool mthd_hdr_valid(const mthd_hdr_t *h) {
  return h->magic == MTHD_MAGIC && h->check == mthd_hdr_check(h) &&
         (h->state == MTHD_LIVE || h->state == MTHD_QUARANTINED || h->state == MTHD_RELEASED);
}

static inline uint8_t *core_of(const mthd_hdr_t *h) { return mthd_user_of(h) - h->pre; }

static size_t right_rz_len(const mthd_hdr_t *h) {
  size_t usable = mtheap_usable_size(core_of(h));
  size_t tail = usable - h->pre - h->size;
  return tail < MTHD_RZ_CHECK ? tail : MTHD_RZ_CHECK;
}

static void reg_insert(mthd_hdr_t *h) {
  mthd_stripe_t *s = &mthd_stripes[h->stripe];
  mthd_lock(&s->lock);
  h->prev = NULL;
  h->next = s->head;
  if (s->head) s->head->prev = h;
  s->head = h;
  s->count++;
  mthd_unlock(&s->lock);
}

static void reg_remove(mthd_hdr_t *h) {
  mthd_stripe_t *s = &mthd_stripes[h->stripe];
  mthd_lock(&s->lock);
  if (h->prev) h->prev->next = h->next;
  else s->head = h->next;
  if (h->next) h->next->prev = h->prev;
  s->count--;
  mthd_unlock(&s->lock);
  h->next = h->prev = NULL;
}

void *mthd_block_alloc(size_t size, size_t align, int family, int flags, uintptr_t caller) {
  bool internal = mthd_tls.busy > 0;
  if (align < 16) align = 16;
  size_t pre = MTHD_PRE_MIN;
  if (align > 16) pre = (pre + align - 1) & ~(align - 1);
  size_t total;
  if (size > ((size_t)1 << 46) || __builtin_add_overflow(pre + mthd_right_rz(size), size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  uint8_t *core = align > 16 ? mtheap_memalign(align, total) : mtheap_malloc(total);
  if (!core) return NULL;
  uint8_t *user = core + pre;
  mthd_hdr_t *h = mthd_hdr_of(user);
  h->magic = MTHD_MAGIC;
  h->state = MTHD_LIVE;
  h->family = (uint8_t)family;
  h->align_log2 = (uint8_t)__builtin_ctzl(align);
  h->flags = (uint8_t)((flags & ~1) | (internal ? MTHD_F_INTERNAL : 0));
  h->size = size;
  h->pre = (uint32_t)pre;
  h->free_stack = 0;
  h->free_tid = 0;
  h->alloc_tid = mthd_tid();
  h->stripe = (uint16_t)(h->alloc_tid % MTHD_STRIPES);
  h->check = mthd_hdr_check(h);
  if (mthd_opt.guards) {
    memset(core, MTHD_PAT_REDZONE, (size_t)((uint8_t *)h - core));
    memset(user - MTHD_LRZ, MTHD_PAT_REDZONE, MTHD_LRZ);
    memset(user + size, MTHD_PAT_REDZONE, right_rz_len(h));
  }
  if (flags & 1) memset(user, 0, size);  /* calloc */
  else if (mthd_opt.patterns && !internal) memset(user, MTHD_PAT_ALLOC, size < mthd_opt.fill_max ? size : mthd_opt.fill_max);
  h->alloc_stack = (mthd_opt.audit && !internal) ? mthd_stack_capture(caller) : 0;
  reg_insert(h);
  if (mthd_opt.quarantine && !internal) mthd_quarantine_tick(caller);
  return user;
}

void mthd_block_release(mthd_hdr_t *h) {
  h->state = MTHD_RELEASED;
  mtheap_free(core_of(h));
}

/* Index of the first byte in [0, n) that is not `pat`, or n.  Eight bytes at a time: this runs
 * over every freed block and every redzone. */
size_t mthd_scan_pattern(const uint8_t *p, size_t n, uint8_t pat) {
  uint64_t w = 0x0101010101010101ull * pat;
  size_t i = 0;
  while (i < n && ((uintptr_t)(p + i) & 7)) {
    if (p[i] != pat) return i;
    i++;
  }
  for (; i + 32 <= n; i += 32) {
    const uint64_t *q = (const uint64_t *)(p + i);
    if ((q[0] ^ w) | (q[1] ^ w) | (q[2] ^ w) | (q[3] ^ w)) break;
  }
  for (; i + 8 <= n; i += 8)
    if (*(const uint64_t *)(p + i) != w) break;
  for (; i < n; i++)
    if (p[i] != pat) return i;
  return n;
}

/* First and last index in [0, n) whose byte is not `pat`; false if all match. */
static bool find_bad(const uint8_t *p, size_t n, uint8_t pat, size_t *first, size_t *last) {
  size_t i = mthd_scan_pattern(p, n, pat);
  if (i == n) return false;
  *first = i;
  size_t j = n;
  while (j > i && p[j - 1] == pat) j--;
  *last = j - 1;
  return true;
}

static const char *plural(size_t n) { return n == 1 ? "" : "s"; }

int mthd_block_check(mthd_hdr_t *h, const char *when, uintptr_t caller) {
  if (!mthd_opt.guards || (h->flags & MTHD_F_REPORTED)) return 0;
  uint8_t *user = mthd_user_of(h), *core = core_of(h);
  size_t first, last;
  int errors = 0;
  size_t rlen = right_rz_len(h);
  if (find_bad(user + h->size, rlen, MTHD_PAT_REDZONE, &first, &last)) {
    mthd_out_t o;
    size_t past = last + 1;
    mthd_report_begin(&o, "heap-buffer-overflow", user + h->size + first, "(%s%zu byte%s past a %zu-byte block)",
                      last + 1 == rlen ? "at least " : "", past, plural(past), (size_t)h->size);
    mthd_printf(&o, "  WRITE past the end: %zu redzone byte%s changed, offsets %zu..%zu of the block, found at %s\n",
                last - first + 1, plural(last - first + 1), (size_t)h->size + first, (size_t)h->size + last, when);
    size_t show = last + 1 < 16 ? 16 : last + 1;
    if (show > rlen) show = rlen;
    if (show > 64) show = 64;
    mthd_printf(&o, "  right redzone at %p (block+%zu), %zu bytes shown:\n", (void *)(user + h->size), (size_t)h->size, show);
    mthd_hexdump(&o, user + h->size, show, MTHD_PAT_REDZONE);
    mthd_note_writer_unknown(&o, when, false);
    mthd_print_block(&o, h);
    memset(user + h->size, MTHD_PAT_REDZONE, rlen);
    h->flags |= MTHD_F_REPORTED;
    mthd_report_end(&o, caller, when);
    errors++;
  }
  uint8_t *lz = user - MTHD_LRZ;
  bool bad_lead = find_bad(core, (size_t)((uint8_t *)h - core), MTHD_PAT_REDZONE, &first, &last);
  if (find_bad(lz, MTHD_LRZ, MTHD_PAT_REDZONE, &first, &last) || bad_lead) {
    mthd_out_t o;
    size_t before = bad_lead ? (size_t)(user - core) : MTHD_LRZ - first;
    mthd_report_begin(&o, "heap-buffer-underflow", bad_lead ? (void *)core : (void *)(lz + first),
                      "(%s%zu byte%s before a %zu-byte block)", bad_lead ? "at least " : "", before, plural(before),
                      (size_t)h->size);
    mthd_printf(&o, "  WRITE before the start: left redzone changed, found at %s\n", when);
    mthd_printf(&o, "  left redzone at %p (block-%d):\n", (void *)lz, MTHD_LRZ);
    mthd_hexdump(&o, lz, MTHD_LRZ, MTHD_PAT_REDZONE);
    mthd_note_writer_unknown(&o, when, true);
    mthd_print_block(&o, h);
    memset(lz, MTHD_PAT_REDZONE, MTHD_LRZ);
    memset(core, MTHD_PAT_REDZONE, (size_t)((uint8_t *)h - core));
    h->flags |= MTHD_F_REPORTED;
    mthd_report_end(&o, caller, when);
    errors++;
  }
  return errors;
}

/* p is a live block's start, but its header fails validation: a write before the block ran
 * through the left redzone into the header (its magic, the farthest field, survived: the
 * registry still found it).  The allocation record sits below the damaged fields unless the
 * write reached it (37 bytes or more); it is printed either way, from a bounds-checked depot. */
static void report_header_underflow(mthd_hdr_t *h, void *p, const char *fn, uintptr_t caller) {
  mthd_out_t o;
  uint8_t *lz = (uint8_t *)p - MTHD_LRZ;
  mthd_report_begin(&o, "heap-buffer-underflow", lz,
                    "(at least %d bytes before a %zu-byte block: into its header)", MTHD_LRZ + 1,
                    (size_t)h->size);
  mthd_printf(&o, "  WRITE before the start: the whole left redzone and the block's header were "
                  "overwritten, found at %s\n", fn);
  mthd_printf(&o, "  left redzone at %p (block-%d):\n", (void *)lz, MTHD_LRZ);
  mthd_hexdump(&o, lz, MTHD_LRZ, MTHD_PAT_REDZONE);
  mthd_printf(&o, "  (the header's own record may be damaged too; the block is not freed)\n");
  mthd_note_writer_unknown(&o, fn, true);
  mthd_print_block(&o, h);
  mthd_report_end(&o, caller, fn);
}

/* A pointer given to free/realloc/... that is not a live block's start: say what it is. */
static void report_bad_pointer(void *p, const char *fn, uintptr_t caller) {
  mthd_out_t o;
  bool quarantined = false;
  mthd_hdr_t *h = mtheap_owns(p) ? mthd_find_block(p, &quarantined) : NULL;
  if (h && !quarantined && (void *)mthd_user_of(h) == p && mthd_hdr_of(p) == h) {
    report_header_underflow(h, p, fn, caller);
    return;
  }
  if (h) {
    uint8_t *user = mthd_user_of(h);
    size_t off = (size_t)((uint8_t *)p - user);
    mthd_report_begin(&o, "bad-free", p, "(%s() of a pointer %zu byte%s inside a %zu-byte %s block)", fn, off,
                      plural(off), (size_t)h->size, quarantined ? "freed" : "live");
    mthd_printf(&o, "  %s() was given an interior pointer: %p is block %p + %zu\n", fn, p, (void *)user, off);
    mthd_print_block(&o, h);
  } else {
    mthd_report_begin(&o, "bad-free", p, "(%s() of a pointer malloc never returned)", fn);
    mthd_describe_address(&o, p);
  }
  mthd_report_end(&o, caller, fn);
}

/* The core found a bad pointer (modes without headers: sample=N alone): the same report as in
 * full mode, with the caller's stack, where the core would print one line. */
void mthd_core_invalid(const char *what, const void *p, const char *why) {
  if (!mtheap_owns(p) || mthd_opt.headers) {
    report_bad_pointer((void *)p, what, 0);
    return;
  }
  mthd_out_t o;
  if (why == mth_why_double_free) {
    /* the core's free found the block free already: it is a heap block, not a stray pointer */
    size_t usable = mth_usable_size(p, what);
    mthd_report_begin(&o, "double-free", p, "(%s() of a %zu-byte block that is free already)", what, usable);
    mthd_printf(&o, "  this mode keeps no record of unsampled blocks; MTHEAP_DEBUG=full says where it was\n"
                    "  allocated and freed the first time\n");
  } else {
    mthd_report_begin(&o, "bad-free", p, "(%s() of a pointer that is %s)", what, why);
    mthd_printf(&o, "  this mode keeps no record of unsampled blocks; MTHEAP_DEBUG=full says which block it is\n"
                    "  and where it was allocated and freed\n");
    mthd_describe_address(&o, p);
  }
  mthd_report_end(&o, 0, what);
}

static void report_double_free(mthd_hdr_t *h, const char *fn, uintptr_t caller) {
  mthd_out_t o;
  bool realloc_ = !strcmp(fn, "realloc");
  mthd_report_begin(&o, realloc_ ? "use-after-free" : "double-free", mthd_user_of(h), "(%s() of a %zu-byte block freed before)",
                    fn, (size_t)h->size);
  if (h->state == MTHD_RELEASED)
    mthd_printf(&o, "  the block already left the quarantine; its history may be stale\n");
  mthd_print_block(&o, h);
  mthd_report_end(&o, caller, fn);
}

static const char *dealloc_name(int family, bool aligned) {
  switch (family) {
    case MTHD_FAM_NEW: return aligned ? "operator delete(align_val_t)" : "operator delete";
    case MTHD_FAM_NEW_ARRAY: return aligned ? "operator delete[](align_val_t)" : "operator delete[]";
    default: return "free";
  }
}

/* The header of the live block p, or NULL after reporting why p cannot be freed. */
static mthd_hdr_t *validate(void *p, const char *fn, uintptr_t caller) {
  if (!mtheap_owns(p)) {
    report_bad_pointer(p, fn, caller);
    return NULL;
  }
  mthd_hdr_t *h = mthd_hdr_of(p);
  if (!mthd_hdr_valid(h)) {
    report_bad_pointer(p, fn, caller);
    return NULL;
  }
  uint8_t expect = MTHD_LIVE;
  if (!__atomic_compare_exchange_n(&h->state, &expect, MTHD_QUARANTINED, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    report_double_free(h, fn, caller);
    return NULL;
  }
  return h;
}

/* The block is ours now (state QUARANTINED): record the free and park or release it. */
static void retire(mthd_hdr_t *h, uintptr_t caller) {
  reg_remove(h);
  h->free_tid = mthd_tid();
  h->free_stack = (mthd_opt.audit && !(h->flags & MTHD_F_INTERNAL)) ? mthd_stack_capture(caller) : 0;
  if (mthd_opt.quarantine && h->size <= mthd_opt.quarantine_max_block && !(h->flags & MTHD_F_INTERNAL)) {
    if (mthd_opt.patterns) memset(mthd_user_of(h), MTHD_PAT_FREE, h->size);
    mthd_quarantine_put(h);
  } else {
    mthd_block_release(h);
  }
}

void mthd_block_free(void *p, int family, size_t sized, size_t align, const char *fn, uintptr_t caller) {
  if (mthd_tls.busy) {
    /* inside our own machinery: no reports, no stacks; a block we cannot vouch for is leaked */
    mthd_hdr_t *h = mthd_hdr_of(p);
    uint8_t expect = MTHD_LIVE;
    if (!mtheap_owns(p) || !mthd_hdr_valid(h) ||
        !__atomic_compare_exchange_n(&h->state, &expect, MTHD_QUARANTINED, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return;
    reg_remove(h);
    mthd_block_release(h);
    return;
  }
  mthd_hdr_t *h = validate(p, fn, caller);
  if (!h) return;
  bool aligned_new = h->flags & MTHD_F_ALIGNED_NEW;
  bool aligned_del = align != 0;
  /* the aligned form is checked only between our own operators: another object's cannot be told */
  bool ours = h->family <= MTHD_FAM_NEW_ARRAY && family <= MTHD_FAM_NEW_ARRAY;
  if ((!mthd_family_matches(h->family, family) ||
       (ours && family != MTHD_FAM_MALLOC && aligned_new != aligned_del)) &&
      !(h->flags & MTHD_F_INTERNAL)) {
    mthd_out_t o;
    mthd_report_begin(&o, "alloc-dealloc-mismatch", p, "(%s vs %s)", mthd_family_alloc_name(h->family, h->flags),
                      dealloc_name(family, aligned_del));
    mthd_printf(&o, "  a %zu-byte block allocated by %s must be released with %s, not %s\n", (size_t)h->size,
                mthd_family_alloc_name(h->family, h->flags), dealloc_name(h->family, aligned_new),
                dealloc_name(family, aligned_del));
    mthd_print_block(&o, h);
    mthd_report_end(&o, caller, fn);
  } else if (sized != (size_t)-1 && sized != h->size) {
    mthd_out_t o;
    mthd_report_begin(&o, "new-delete-type-mismatch", p, "(sized %s with size %zu for a %zu-byte block)", fn, sized,
                      (size_t)h->size);
    mthd_printf(&o, "  the object was allocated with size %zu and deleted as one of size %zu:\n"
                    "  a base class without a virtual destructor, or a wrong static type?\n",
                (size_t)h->size, sized);
    mthd_print_block(&o, h);
    mthd_report_end(&o, caller, fn);
  } else if (align && family == MTHD_FAM_MALLOC && ((size_t)1 << h->align_log2) != (align < 16 ? 16 : align) &&
             h->align_log2 > 4) {
    mthd_out_t o;
    mthd_report_begin(&o, "alloc-dealloc-mismatch", p, "(free_aligned_sized with alignment %zu for a block aligned to %zu)",
                      align, (size_t)1 << h->align_log2);
    mthd_print_block(&o, h);
    mthd_report_end(&o, caller, fn);
  }
  mthd_block_check(h, fn, caller);
  retire(h, caller);
}

void *mthd_block_realloc(void *p, size_t size, uintptr_t caller) {
  if (mthd_tls.busy) {
    mthd_hdr_t *h = mthd_hdr_of(p);
    if (!mtheap_owns(p) || !mthd_hdr_valid(h) || h->state != MTHD_LIVE) return NULL;
    void *q = mthd_block_alloc(size, 16, MTHD_FAM_MALLOC, 0, caller);
    if (!q) return NULL;
    memcpy(q, p, size < h->size ? size : h->size);
    mthd_block_free(p, MTHD_FAM_MALLOC, (size_t)-1, 0, "realloc", caller);
    return q;
  }
  mthd_hdr_t *h = validate(p, "realloc", caller);
  if (!h) return NULL;
  if (!mthd_family_matches(h->family, MTHD_FAM_MALLOC) && !(h->flags & MTHD_F_INTERNAL)) {
    mthd_out_t o;
    mthd_report_begin(&o, "alloc-dealloc-mismatch", p, "(%s vs realloc)", mthd_family_alloc_name(h->family, h->flags));
    mthd_print_block(&o, h);
    mthd_report_end(&o, caller, "realloc");
  }
  mthd_block_check(h, "realloc", caller);
  /* Always move: a caller that keeps using the old pointer then hits a quarantined block. */
  void *q = mthd_block_alloc(size, (size_t)1 << h->align_log2, MTHD_FAM_MALLOC, 0, caller);
  if (!q) {
    h->state = MTHD_LIVE;  /* realloc failed: the old block stays the caller's */
    return NULL;
  }
  memcpy(q, p, size < h->size ? size : h->size);
  retire(h, caller);
  return q;
}

size_t mthd_block_usable(void *p, uintptr_t caller) {
  mthd_hdr_t *h = mthd_hdr_of(p);
  if (!mtheap_owns(p) || !mthd_hdr_valid(h)) {
    if (!mthd_tls.busy) report_bad_pointer(p, "malloc_usable_size", caller);
    return 0;
  }
  if (h->state != MTHD_LIVE && !mthd_tls.busy) {
    mthd_out_t o;
    mthd_report_begin(&o, "use-after-free", p, "(malloc_usable_size() of a freed %zu-byte block)", (size_t)h->size);
    mthd_print_block(&o, h);
    mthd_report_end(&o, caller, "malloc_usable_size");
  }
  /* the requested size: a caller that trusts it never writes into the redzone */
  return h->size;
}

/* Every live block's header and redzones, then the quarantine's free patterns (at exit, and
 * from mtheap_check_heap: a block never freed is checked too). */
int mthd_check_all(const char *when, uintptr_t caller) {
  int errors = 0;
  for (int i = 0; i < MTHD_STRIPES; i++) {
    mthd_stripe_t *s = &mthd_stripes[i];
    /* Checks may report (and abort); the report path takes no stripe lock. */
    mthd_lock(&s->lock);
    for (mthd_hdr_t *h = s->head; h; h = h->next) {
      if (!mthd_hdr_valid(h)) {
        /* the list led here, so this is a header; with its magic intact the fields after it
         * were hit from the block's side: an underflow, as free() would report it */
        void *user = (uint8_t *)h + sizeof *h + MTHD_LRZ;
        bool under = h->magic == MTHD_MAGIC;
        mthd_out_t o;
        mthd_unlock(&s->lock);
        if (under) {
          report_header_underflow(h, user, when, caller);
        } else {
          mthd_report_begin(&o, "heap-corruption", h, "(the header of a live block was overwritten)");
          mthd_printf(&o, "  header bytes at %p:\n", (void *)h);
          mthd_hexdump(&o, (const uint8_t *)h, sizeof *h, 0);
          mthd_report_end(&o, caller, when);
        }
        errors++;
        mthd_lock(&s->lock);
        break;  /* its links cannot be trusted */
      }
      errors += mthd_block_check(h, when, caller);
    }
    mthd_unlock(&s->lock);
  }
  if (mthd_opt.patterns) errors += mthd_quarantine_check(when, caller);
  return errors;
}

/* The live or quarantined block whose user bytes contain addr (a slow scan: error paths only). */
mthd_hdr_t *mthd_find_block(const void *addr, bool *quarantined) {
  uintptr_t a = (uintptr_t)addr;
  *quarantined = false;
  for (int i = 0; i < MTHD_STRIPES; i++) {
    mthd_stripe_t *s = &mthd_stripes[i];
    mthd_lock(&s->lock);
    for (mthd_hdr_t *h = s->head; h; h = h->next) {
      if (h->magic != MTHD_MAGIC) break;
      uintptr_t u = (uintptr_t)mthd_user_of(h);
      if (a >= u && a < u + (h->size ? h->size : 1)) {
        mthd_unlock(&s->lock);
        return h;
      }
    }
    mthd_unlock(&s->lock);
  }
  mthd_hdr_t *h = mthd_quarantine_find(addr);
  if (h) *quarantined = true;
  return h;
}
