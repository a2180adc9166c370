/* Call stacks: capture (unwinding) and a deduplicating depot that names each distinct stack
 * with a 32-bit id, so a block header holds two small numbers instead of two arrays.
 *
 * Invariants
 *   - a record, once published in a bucket chain, is immutable and never freed: an id is valid
 *     for the life of the process, and readers (lookup, reports, the SIGSEGV handler) walk the
 *     chains without a lock (the release store of the bucket head orders the record's bytes);
 *   - inserts take mthd_depot_lock; memory is one MAP_NORESERVE reservation, bump-allocated;
 *   - id 0 means "no stack"; id = (record offset / 8) + 1;
 *   - unwinding never calls malloc: the cached CFI walk (unwind.c), libgcc's _Unwind_Backtrace
 *     where that walk gives up (it finds FDEs with glibc's lock-free _dl_find_object), or a
 *     bounded frame-pointer walk.
 */
#include "mthd.h"

#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unwind.h>

#define DEPOT_BUCKETS ((size_t)1 << 20)
#define DEPOT_ARENA ((size_t)1 << 30)

typedef struct {
  uint32_t next, hash, n, pad;
  uintptr_t pc[];
} mthd_rec_t;

MTHD_HIDDEN mthd_lock_t mthd_depot_lock;
static _Atomic uint32_t *depot_buckets;
static uint8_t *depot_arena;
static size_t depot_used;

/* our own code, whose frames a captured stack leaves out */
extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));
static uintptr_t text_lo, text_hi;

/* our executable segment, from our own program headers (mapped with the first PT_LOAD) */
static void find_text(void) {
  const ElfW(Ehdr) *eh = &__ehdr_start;
  const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
  uintptr_t base = 0;
  bool have_base = false;
  for (int i = 0; i < eh->e_phnum; i++) {
    if (ph[i].p_type != PT_LOAD) continue;
    if (!have_base) {
      base = (uintptr_t)eh - (ph[i].p_vaddr & ~(uintptr_t)4095);
      have_base = true;
    }
    if (ph[i].p_flags & PF_X) {
      text_lo = base + ph[i].p_vaddr;
      text_hi = text_lo + ph[i].p_memsz;
      return;
    }
  }
  text_hi = 1;
}

bool mthd_pc_is_ours(uintptr_t pc) {
  if (MTHD_UNLIKELY(!text_hi)) find_text();
  return pc >= text_lo && pc < text_hi;
}

static bool depot_init(void) {
  if (depot_arena) return true;
  void *b = mmap(NULL, DEPOT_BUCKETS * sizeof(uint32_t), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  void *a = mmap(NULL, DEPOT_ARENA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (b == MAP_FAILED || a == MAP_FAILED) return false;
  depot_buckets = b;
  depot_used = 8;  /* offset 0 would be id 1; keep ids of real records > 1 for readability */
  atomic_thread_fence(memory_order_release);
  depot_arena = a;
  return true;
}

void mthd_depot_range(uintptr_t *start, uintptr_t *end) {
  *start = (uintptr_t)depot_arena;
  *end = (uintptr_t)depot_arena + depot_used;
}

struct uw_state {
  uintptr_t *pcs;
  int n, max;
};

static _Unwind_Reason_Code uw_cb(struct _Unwind_Context *ctx, void *arg) {
  struct uw_state *u = arg;
  uintptr_t pc = (uintptr_t)_Unwind_GetIP(ctx);
  if (pc == 0) return _URC_END_OF_STACK;
  /* our frames are not the program's: the top ones (malloc, the report) and, further down,
   * start.c's wrapper around main */
  if (mthd_pc_is_ours(pc)) return _URC_NO_REASON;
  u->pcs[u->n++] = pc;
  return u->n >= u->max ? _URC_END_OF_STACK : _URC_NO_REASON;
}

extern void *__libc_stack_end;

/* The end of the stack the caller runs on, found without a lock or a malloc: pthread_getattr_np
 * takes the thread's lock and mallocs, and called from a malloc that pthread_getattr_np itself
 * made (the JVM does that at every thread start) it waited on its own lock for ever.  glibc
 * puts a thread's descriptor (pthread_self()) at the top of its stack block, above every frame,
 * also on stacks the program supplies; the main thread's frames lie below __libc_stack_end.
 * 0: neither holds (a signal stack, a fiber's stack), no end known. */
#define STACK_MAX ((uintptr_t)1 << 30)
static uintptr_t stack_end(uintptr_t sp) {
  uintptr_t top = (uintptr_t)pthread_self();
  if (sp < top && top - sp < STACK_MAX) return top;
  top = (uintptr_t)__libc_stack_end;
  if (sp < top && top - sp < STACK_MAX) return top;
  return 0;
}

/* Frame-pointer walk: fast, exact for code built with frame pointers, and stops at the first
 * frame pointer that does not look like one (above this frame, below the stack's end, growing
 * upwards). */
static int unwind_fp(uintptr_t *pcs, int max, uintptr_t caller) {
  uintptr_t *fp = __builtin_frame_address(0);
  uintptr_t lo = (uintptr_t)fp, hi = stack_end(lo);
  int n = 0;
  if (caller) pcs[n++] = caller;
  bool skipping = true;
  while (n < max) {
    /* written so that no sum can wrap: a frameless function leaves any value in rbp (gcc's
     * cc1 reached here with -8, which fp + 16 turned into 8) */
    if ((uintptr_t)fp < lo || hi - lo < 16 || (uintptr_t)fp > hi - 16 || ((uintptr_t)fp & 7)) break;
    uintptr_t *next = (uintptr_t *)fp[0];
    uintptr_t ret = fp[1];
    if (ret < 4096) break;
    if (skipping) {
      if (mthd_pc_is_ours(ret)) {
        fp = next;
        continue;
      }
      skipping = false;
      if (caller && ret == caller) {  /* already recorded */
        if (next <= fp) break;
        fp = next;
        continue;
      }
    }
    if (!mthd_pc_is_ours(ret)) pcs[n++] = ret;   /* start.c's wrapper around main */
    if (next <= fp) break;
    fp = next;
  }
  return n;
}

/* The cached CFI walk (unwind.c), with our own frames left out as uw_cb does.  -1: a frame
 * it cannot walk. */
static int unwind_cached(uintptr_t *pcs, int max) {
  uintptr_t raw[MTHD_MAX_DEPTH + 32];
  int room = max + 32 < (int)(sizeof raw / sizeof raw[0]) ? max + 32 : (int)(sizeof raw / sizeof raw[0]);
  int got = mthd_unwind_cached(raw, room, stack_end((uintptr_t)__builtin_frame_address(0)));
  if (got < 0) return -1;
  int n = 0;
  for (int i = 0; i < got && n < max; i++)
    if (!mthd_pc_is_ours(raw[i])) pcs[n++] = raw[i];
  return n;
}

int mthd_unwind(uintptr_t *pcs, int max, uintptr_t caller) {
  if (max > MTHD_MAX_DEPTH) max = MTHD_MAX_DEPTH;
  if (mthd_opt.unwind == MTHD_UNWIND_FP) return unwind_fp(pcs, max, caller);
  if (mthd_opt.unwind == MTHD_UNWIND_CFI) {
    int n = unwind_cached(pcs, max);
    if (n >= 0) {
      if (n == 0 && caller) pcs[n++] = caller;
      return n;
    }
  }
  struct uw_state u = {pcs, 0, max};
  mthd_tls.busy++;
  _Unwind_Backtrace(uw_cb, &u);
  mthd_tls.busy--;
  if (u.n == 0 && caller) pcs[u.n++] = caller;
  return u.n;
}

static uint32_t hash_pcs(const uintptr_t *pcs, int n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
  for (int i = 0; i < n; i++) {
    h ^= pcs[i];
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
  }
  return (uint32_t)(h ^ (h >> 32));
}

static mthd_rec_t *rec_of(uint32_t id) { return (mthd_rec_t *)(depot_arena + ((size_t)(id - 1) << 3)); }

static uint32_t depot_put(const uintptr_t *pcs, int n) {
  if (n <= 0) return 0;
  uint32_t h = hash_pcs(pcs, n);
  if (MTHD_UNLIKELY(!depot_arena)) {
    mthd_lock(&mthd_depot_lock);
    bool ok = depot_init();
    mthd_unlock(&mthd_depot_lock);
    if (!ok) return 0;
  }
  _Atomic uint32_t *bucket = &depot_buckets[h & (DEPOT_BUCKETS - 1)];
  uint32_t head = atomic_load_explicit(bucket, memory_order_acquire);
  for (uint32_t id = head; id; id = rec_of(id)->next) {
    mthd_rec_t *r = rec_of(id);
    if (r->hash == h && r->n == (uint32_t)n && !memcmp(r->pc, pcs, (size_t)n * sizeof(uintptr_t))) return id;
  }
  mthd_lock(&mthd_depot_lock);
  /* someone may have inserted it meanwhile: look again at what was added since `head` */
  uint32_t now = atomic_load_explicit(bucket, memory_order_acquire);
  for (uint32_t id = now; id && id != head; id = rec_of(id)->next) {
    mthd_rec_t *r = rec_of(id);
    if (r->hash == h && r->n == (uint32_t)n && !memcmp(r->pc, pcs, (size_t)n * sizeof(uintptr_t))) {
      mthd_unlock(&mthd_depot_lock);
      return id;
    }
  }
  size_t need = sizeof(mthd_rec_t) + (size_t)n * sizeof(uintptr_t);
  if (depot_used + need > DEPOT_ARENA) {
    mthd_unlock(&mthd_depot_lock);
    return 0;
  }
  mthd_rec_t *r = (mthd_rec_t *)(depot_arena + depot_used);
  uint32_t id = (uint32_t)(depot_used >> 3) + 1;
  depot_used += need;
  r->hash = h;
  r->n = (uint32_t)n;
  memcpy(r->pc, pcs, (size_t)n * sizeof(uintptr_t));
  r->next = now;
  atomic_store_explicit(bucket, id, memory_order_release);
  mthd_unlock(&mthd_depot_lock);
  return id;
}

uint32_t mthd_stack_capture(uintptr_t caller) {
  uintptr_t pcs[MTHD_MAX_DEPTH];
  int n = mthd_unwind(pcs, mthd_opt.depth, caller);
  return depot_put(pcs, n);
}

int mthd_stack_get(uint32_t id, const uintptr_t **pcs) {
  if (id == 0 || !depot_arena || ((size_t)(id - 1) << 3) >= depot_used) return 0;
  mthd_rec_t *r = rec_of(id);
  *pcs = r->pc;
  /* an id read from a damaged header may land inside another record: never read past the
   * depot or further than any stack can be deep */
  size_t room = (depot_used - ((size_t)(id - 1) << 3) - sizeof *r) / sizeof(uintptr_t);
  size_t n = r->n;
  if (n > MTHD_MAX_DEPTH) n = MTHD_MAX_DEPTH;
  if (n > room) n = room;
  return (int)n;
}
