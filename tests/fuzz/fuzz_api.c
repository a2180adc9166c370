/* fuzz_api.c: a model-checked fuzzer of the allocator's API.
 *
 * A byte string is a program: its first byte picks 1..4 threads, and thread t executes the
 * bytes t, t+n, t+2n, ... as operations (malloc, calloc, realloc up/down/to zero,
 * reallocarray, the aligned family with good and bad alignments, valloc/pvalloc, free,
 * free_sized, usable_size, mtheap_collect, passing a block to another thread, fork) over every
 * size range (tiny, size-class edges, large, huge, near-overflow).  A shadow model checks
 * every answer: each live block is filled with a pattern derived from its id and checked
 * before free and after realloc (the kept prefix), its alignment and usable size are checked,
 * and no two live blocks, across all threads, overlap.  A wrong answer prints one line and
 * aborts.  At the end every block is freed and the statistics must balance.
 *
 * Built three ways from this file: mtfz_replay (corpus files plus N random seeds, see
 * replay.c), mtfz_libfuzzer (clang -fsanitize=fuzzer,address), and under TSan.  The prefixed
 * API (mtheap_malloc ...) leaves malloc to the sanitizer or to libc. */
#include "fuzz_api.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mtheap.h"

#define MTFZ_SLOTS 48            /* live blocks per thread */
#define MTFZ_HANDOFF 8           /* blocks in flight between threads */
#define MTFZ_MAX_THREADS 4
#define MTFZ_LIVE_CAP (192u << 20) /* skip big requests above this many live bytes */

struct mtfz_block {
  uint8_t *p;
  size_t size, align;
  uint64_t id;
};

/* Every live block of every thread, for the overlap check (under g_model_lock). */
static pthread_mutex_t g_model_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mtfz_block g_live[MTFZ_MAX_THREADS * MTFZ_SLOTS + MTFZ_HANDOFF];
static size_t g_nlive, g_live_bytes;
static struct mtfz_block g_handoff[MTFZ_HANDOFF];
static uint64_t g_next_id;
static int g_allow_fork;
static uint64_t g_ops;

struct mtfz_thread {
  const uint8_t *data;
  size_t size, pos, stride;
  int index;
  struct mtfz_block slot[MTFZ_SLOTS];
};

static _Noreturn void mtfz_fail(const char *op, size_t size, const char *what) {
  fprintf(stderr, "mtfz: FAIL op %" PRIu64 " (%s, size %zu): %s\n", g_ops, op, size, what);
  abort();
}

static uint8_t mtfz_byte(struct mtfz_thread *t) {
  if (t->pos >= t->size) return 0;
  uint8_t b = t->data[t->pos];
  t->pos += t->stride;
  return b;
}
static int mtfz_done(const struct mtfz_thread *t) { return t->pos >= t->size; }

/* ---- patterns --------------------------------------------------------------------------- */
static inline uint8_t mtfz_pat(uint64_t id, size_t off) {
  uint64_t x = id * 0x9e3779b97f4a7c15ull + (off >> 3) * 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return (uint8_t)(x >> ((off & 7) * 8));
}
/* Which bytes carry the pattern: all of a block up to 64 KiB; beyond, the first and last 4 KiB
 * and 64 bytes of every 4 KiB page up to 1 MiB, of every 64 KiB beyond (the edges exact; a
 * huge block costs 512 page faults per 32 MiB, not 8192, so a replay pass takes seconds). */
static inline int mtfz_covered(size_t off, size_t size) {
  return size <= 65536 || off < 4096 || off >= size - 4096 ||
         (off & (size <= (1u << 20) ? 4095 : 65535)) < 64;
}
static void mtfz_fill(uint8_t *p, size_t size, uint64_t id) {
  for (size_t o = 0; o < size; o++) {
    if (!mtfz_covered(o, size)) { o = (o | 4095); continue; }
    p[o] = mtfz_pat(id, o);
  }
}
static void mtfz_check(const char *op, const uint8_t *p, size_t size, size_t upto, uint64_t id,
                       size_t pattern_size) {
  for (size_t o = 0; o < upto; o++) {
    if (!mtfz_covered(o, pattern_size)) { o = (o | 4095); continue; }
    if (p[o] != mtfz_pat(id, o)) {
      char msg[160];
      snprintf(msg, sizeof msg, "block %p id %" PRIu64 ": byte %zu of %zu is 0x%02x, expected 0x%02x",
               (const void *)p, id, o, size, p[o], mtfz_pat(id, o));
      mtfz_fail(op, size, msg);
    }
  }
}

/* ---- the model --------------------------------------------------------------------------- */
static void mtfz_model_add(const char *op, struct mtfz_block b) {
  pthread_mutex_lock(&g_model_lock);
  size_t usable = mtheap_usable_size(b.p);
  for (size_t i = 0; i < g_nlive; i++) {
    const struct mtfz_block *o = &g_live[i];
    size_t ou = mtheap_usable_size(o->p);
    if (b.p < o->p + ou && o->p < b.p + usable) {
      char msg[200];
      snprintf(msg, sizeof msg, "new block %p+%zu overlaps live block %p+%zu (id %" PRIu64 ")",
               (void *)b.p, usable, (void *)o->p, ou, o->id);
      pthread_mutex_unlock(&g_model_lock);
      mtfz_fail(op, b.size, msg);
    }
  }
  g_live[g_nlive++] = b;
  __atomic_add_fetch(&g_live_bytes, b.size, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&g_model_lock);
}
static void mtfz_model_del(const struct mtfz_block *b) {
  pthread_mutex_lock(&g_model_lock);
  for (size_t i = 0; i < g_nlive; i++) {
    if (g_live[i].p == b->p) {
      __atomic_sub_fetch(&g_live_bytes, g_live[i].size, __ATOMIC_RELAXED);
      g_live[i] = g_live[--g_nlive];
      break;
    }
  }
  pthread_mutex_unlock(&g_model_lock);
}
static uint64_t mtfz_new_id(void) { return __atomic_add_fetch(&g_next_id, 1, __ATOMIC_RELAXED); }

/* A fresh block from the allocator: its contract checked, its pattern written, recorded. */
static void mtfz_accept(const char *op, struct mtfz_thread *t, int slot, void *p, size_t size,
                        size_t align) {
  if (!p) mtfz_fail(op, size, "NULL for a size and alignment that should succeed");
  size_t min_align = size >= 16 ? 16 : 8;
  if (align < min_align) align = min_align;
  if ((uintptr_t)p & (align - 1)) mtfz_fail(op, size, "misaligned block");
  if (mtheap_usable_size(p) < size) mtfz_fail(op, size, "usable size below the request");
  struct mtfz_block b = { p, size, align, mtfz_new_id() };
  mtfz_fill(b.p, size, b.id);
  mtfz_model_add(op, b);
  t->slot[slot] = b;
}

static void mtfz_release(const char *op, struct mtfz_block *b) {
  mtfz_check(op, b->p, b->size, b->size, b->id, b->size);
  mtfz_model_del(b);
}

/* ---- sizes ------------------------------------------------------------------------------- */
static const size_t mtfz_edges[] = {
  1, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768,
  896, 1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 12288,
  16384, 24576, 32768, 49152, 65536, 98304, 131072, 196608, 262144, 524288, 1048576, 2097152,
  4194304, 8388608
};
static size_t mtfz_size(struct mtfz_thread *t) {
  uint8_t k = mtfz_byte(t), a = mtfz_byte(t), b = mtfz_byte(t);
  size_t v = (size_t)a << 8 | b;
  switch (k % 16) {
  case 0: case 1: case 2: case 3: case 4: return v % 65;                         /* tiny */
  case 5: case 6: case 7: case 8: {                                              /* class edges */
    size_t e = mtfz_edges[a % (sizeof mtfz_edges / sizeof mtfz_edges[0])];
    return e + (size_t)(b % 3) - 1;
  }
  case 9: case 10: return v % 1025;                                              /* small */
  case 11: case 12: return v % 65537;                                            /* medium */
  case 13: case 14: return (v << 7) % (8u << 20);                                /* large */
  default: return (32u << 20) + (v << 9) % (32u << 20);                          /* huge */
  }
}
static int mtfz_affordable(size_t size) {
  return size < (1u << 20) || __atomic_load_n(&g_live_bytes, __ATOMIC_RELAXED) + size < MTFZ_LIVE_CAP;
}

/* ---- operations -------------------------------------------------------------------------- */
enum {
  OP_MALLOC, OP_CALLOC, OP_REALLOC_UP, OP_REALLOC_DOWN, OP_REALLOC_ZERO, OP_REALLOCARRAY,
  OP_POSIX_MEMALIGN, OP_ALIGNED_ALLOC, OP_MEMALIGN, OP_VALLOC, OP_FREE, OP_FREE_SIZED,
  OP_USABLE, OP_COLLECT, OP_HANDOFF_PUT, OP_HANDOFF_TAKE, OP_OVERFLOW, OP_FORK, OP_COUNT
};

static void mtfz_free_slot(struct mtfz_thread *t, int s, int sized) {
  struct mtfz_block *b = &t->slot[s];
  mtfz_release(sized ? "free_sized" : "free", b);
  if (sized == 1) mtheap_free_sized(b->p, b->size);
  else if (sized == 2) mtheap_free_aligned_sized(b->p, b->align, b->size);
  else mtheap_free(b->p);
  b->p = NULL;
}

static void mtfz_realloc(struct mtfz_thread *t, int s, size_t size, const char *op) {
  struct mtfz_block *b = &t->slot[s];
  if (!mtfz_affordable(size)) return;
  mtfz_check(op, b->p, b->size, b->size, b->id, b->size);
  struct mtfz_block old = *b;
  mtfz_model_del(b);
  uint8_t *q = mtheap_realloc(b->p, size);
  if (!q) {
    if (size == 0) { b->p = NULL; return; } /* realloc(p, 0) frees p, as glibc */
    mtfz_fail(op, size, "realloc returned NULL");
  }
  size_t keep = old.size < size ? old.size : size;
  /* the kept prefix: the pattern of the old block, read within the pattern's own coverage */
  for (size_t o = 0; o < keep; o++) {
    if (!mtfz_covered(o, old.size)) { o = (o | 4095); continue; }
    if (q[o] != mtfz_pat(old.id, o)) mtfz_fail(op, size, "realloc lost the block's contents");
  }
  if ((uintptr_t)q & 15 && size >= 16) mtfz_fail(op, size, "realloc: misaligned block");
  if (mtheap_usable_size(q) < size) mtfz_fail(op, size, "realloc: usable size below the request");
  struct mtfz_block nb = { q, size, 16, mtfz_new_id() };
  mtfz_fill(q, size, nb.id);
  mtfz_model_add(op, nb);
  *b = nb;
}

static void mtfz_fork(struct mtfz_thread *t) {
  if (!g_allow_fork) return;
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) return;
  if (pid == 0) {
    /* the child: this thread's blocks are intact and usable; the allocator works */
    for (int s = 0; s < MTFZ_SLOTS; s++)
      if (t->slot[s].p) mtfz_check("fork child", t->slot[s].p, t->slot[s].size, t->slot[s].size,
                                   t->slot[s].id, t->slot[s].size);
    for (int i = 0; i < 100; i++) {
      void *p = mtheap_malloc((size_t)i * 37);
      if (!p && i) _exit(1);
      mtheap_free(p);
    }
    for (int s = 0; s < MTFZ_SLOTS; s++)
      if (t->slot[s].p) mtheap_free(t->slot[s].p);
    _exit(0);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    mtfz_fail("fork", 0, "the forked child failed");
}

static void mtfz_step(struct mtfz_thread *t) {
  uint8_t op = mtfz_byte(t) % OP_COUNT;
  int s = mtfz_byte(t) % MTFZ_SLOTS;
  struct mtfz_block *b = &t->slot[s];
  __atomic_add_fetch(&g_ops, 1, __ATOMIC_RELAXED);
  switch (op) {
  case OP_MALLOC: {
    size_t size = mtfz_size(t);
    if (b->p) mtfz_free_slot(t, s, 0);
    if (mtfz_affordable(size)) mtfz_accept("malloc", t, s, mtheap_malloc(size), size, 0);
    break;
  }
  case OP_CALLOC: {
    size_t n = 1 + mtfz_byte(t) % 64, size = mtfz_size(t) / n;
    if (b->p) mtfz_free_slot(t, s, 0);
    if (!mtfz_affordable(n * size)) break;
    uint8_t *p = mtheap_calloc(n, size);
    if (!p) mtfz_fail("calloc", n * size, "NULL");
    for (size_t o = 0; o < n * size; o++) {
      if (!mtfz_covered(o, n * size)) { o = (o | 4095); continue; }
      if (p[o]) mtfz_fail("calloc", n * size, "memory not zeroed");
    }
    mtfz_accept("calloc", t, s, p, n * size, 0);
    break;
  }
  case OP_REALLOC_UP:
    if (b->p) mtfz_realloc(t, s, b->size + 1 + mtfz_size(t), "realloc up");
    break;
  case OP_REALLOC_DOWN:
    if (b->p && b->size > 1) mtfz_realloc(t, s, b->size / (2 + mtfz_byte(t) % 8) + 1, "realloc down");
    break;
  case OP_REALLOC_ZERO:
    if (b->p) mtfz_realloc(t, s, 0, "realloc to 0");
    break;
  case OP_REALLOCARRAY: {
    size_t n = (size_t)mtfz_byte(t) + 2;
    if (mtfz_byte(t) % 4 == 0) {       /* an overflowing product: ENOMEM, the block untouched */
      errno = 0;
      void *q = mtheap_reallocarray(b->p, SIZE_MAX / n + 1, n + 1);
      if (q || errno != ENOMEM) mtfz_fail("reallocarray", 0, "overflow not refused with ENOMEM");
      if (b->p) mtfz_check("reallocarray", b->p, b->size, b->size, b->id, b->size);
    } else if (b->p) {
      mtfz_realloc(t, s, n * (1 + mtfz_byte(t)), "reallocarray");
    }
    break;
  }
  case OP_POSIX_MEMALIGN: case OP_ALIGNED_ALLOC: case OP_MEMALIGN: {
    uint8_t k = mtfz_byte(t);
    size_t align = (size_t)1 << (k % 21), size = mtfz_size(t);
    int bad = k >= 240;                       /* not a power of two */
    if (bad) align = 3 * (1 + k % 7) * 8;
    if (b->p) mtfz_free_slot(t, s, 0);
    if (!mtfz_affordable(size + align)) break;
    if (op == OP_POSIX_MEMALIGN) {
      void *p = NULL;
      int r = mtheap_posix_memalign(&p, align, size);
      if (bad || align < sizeof(void *)) {
        if (r != EINVAL) mtfz_fail("posix_memalign", size, "a bad alignment was not refused");
        break;
      }
      if (r) mtfz_fail("posix_memalign", size, "failed");
      mtfz_accept("posix_memalign", t, s, p, size, align);
    } else if (op == OP_ALIGNED_ALLOC) {
      errno = 0;
      void *p = mtheap_aligned_alloc(align, size);
      if (bad) {
        if (p || errno != EINVAL) mtfz_fail("aligned_alloc", size, "a bad alignment was not refused");
        break;
      }
      mtfz_accept("aligned_alloc", t, s, p, size, align);
    } else {
      /* glibc's memalign rounds a non-power of two up */
      size_t want = align;
      if (bad) { want = 1; while (want < align) want <<= 1; }
      mtfz_accept("memalign", t, s, mtheap_memalign(align, size), size, want);
      t->slot[s].align = want;
    }
    break;
  }
  case OP_VALLOC: {
    size_t size = mtfz_size(t);
    if (b->p) mtfz_free_slot(t, s, 0);
    if (!mtfz_affordable(size + 4096)) break;
    size_t ps = (size_t)getpagesize();
    if (mtfz_byte(t) & 1) mtfz_accept("valloc", t, s, mtheap_valloc(size), size, ps);
    else mtfz_accept("pvalloc", t, s, mtheap_pvalloc(size), size, ps);
    break;
  }
  case OP_FREE:
    if (b->p) mtfz_free_slot(t, s, 0);
    else mtheap_free(NULL);
    break;
  case OP_FREE_SIZED:
    if (b->p) mtfz_free_slot(t, s, b->align > 16 ? 2 : 1);
    break;
  case OP_USABLE:
    if (b->p) {
      size_t u = mtheap_usable_size(b->p);
      if (u < b->size) mtfz_fail("usable_size", b->size, "below the request");
      mtfz_check("usable_size", b->p, b->size, b->size, b->id, b->size);
    }
    break;
  case OP_COLLECT:
    mtheap_collect(mtfz_byte(t) & 1);
    break;
  case OP_HANDOFF_PUT:
    if (b->p) {
      pthread_mutex_lock(&g_model_lock);
      int h = mtfz_byte(t) % MTFZ_HANDOFF;
      if (!g_handoff[h].p) { g_handoff[h] = *b; b->p = NULL; }
      pthread_mutex_unlock(&g_model_lock);
    }
    break;
  case OP_HANDOFF_TAKE:
    if (!b->p) {
      pthread_mutex_lock(&g_model_lock);
      int h = mtfz_byte(t) % MTFZ_HANDOFF;
      if (g_handoff[h].p) { *b = g_handoff[h]; g_handoff[h].p = NULL; }
      pthread_mutex_unlock(&g_model_lock);
    }
    break;
  case OP_OVERFLOW: {
    static const size_t big[] = { SIZE_MAX, SIZE_MAX - 4096, SIZE_MAX / 2 + 1, PTRDIFF_MAX,
                                  (size_t)PTRDIFF_MAX + 1, (size_t)1 << 48 };
    size_t size = big[mtfz_byte(t) % (sizeof big / sizeof big[0])];
    errno = 0;
    void *p = mtheap_malloc(size);
    if (p || errno != ENOMEM) mtfz_fail("malloc", size, "an impossible size was not refused with ENOMEM");
    errno = 0;
    p = mtheap_calloc(size, 2);
    if (p || errno != ENOMEM) mtfz_fail("calloc", size, "an overflowing product was not refused");
    if (b->p) {
      errno = 0;
      p = mtheap_realloc(b->p, size);
      if (p || errno != ENOMEM) mtfz_fail("realloc", size, "an impossible size was not refused");
      mtfz_check("realloc", b->p, b->size, b->size, b->id, b->size);  /* left as it was */
    }
    break;
  }
  case OP_FORK:
    if (mtfz_byte(t) == 0x5a) mtfz_fork(t);
    break;
  }
}

static void *mtfz_thread_main(void *arg) {
  struct mtfz_thread *t = arg;
  while (!mtfz_done(t)) mtfz_step(t);
  /* this thread's blocks: half freed here, half left for the next wave (freed by another
   * thread after this one exited) through the handoff slots */
  for (int s = 0; s < MTFZ_SLOTS; s++) {
    if (!t->slot[s].p) continue;
    int left = 0;
    if (s & 1) {
      pthread_mutex_lock(&g_model_lock);
      for (int h = 0; h < MTFZ_HANDOFF && !left; h++)
        if (!g_handoff[h].p) { g_handoff[h] = t->slot[s]; left = 1; }
      pthread_mutex_unlock(&g_model_lock);
    }
    if (!left) mtfz_free_slot(t, s, 0);
    t->slot[s].p = NULL;
  }
  return NULL;
}

uint64_t mtfz_ops(void) { return __atomic_load_n(&g_ops, __ATOMIC_RELAXED); }

int mtfz_run(const uint8_t *data, size_t size, int allow_fork) {
  if (size < 2) return 0;
  g_allow_fork = allow_fork;
  struct mtheap_stats before, after;
  mtheap_stats_get(&before);
  int nthreads = 1 + data[0] % MTFZ_MAX_THREADS;
  int waves = 1 + (data[0] >> 4) % 2;
  for (int w = 0; w < waves; w++) {
    static struct mtfz_thread th[MTFZ_MAX_THREADS];
    pthread_t tid[MTFZ_MAX_THREADS];
    for (int i = 0; i < nthreads; i++) {
      memset(&th[i], 0, sizeof th[i]);
      th[i].data = data + 1;
      th[i].size = size - 1;
      th[i].pos = (size_t)i + (size_t)w;  /* a second wave reads the bytes shifted by one */
      th[i].stride = (size_t)nthreads;
      th[i].index = i;
    }
    int started[MTFZ_MAX_THREADS] = { 0 };
    for (int i = 0; i < nthreads; i++)
      started[i] = nthreads > 1 && pthread_create(&tid[i], NULL, mtfz_thread_main, &th[i]) == 0;
    for (int i = 0; i < nthreads; i++) {
      if (started[i]) pthread_join(tid[i], NULL);
      else mtfz_thread_main(&th[i]);  /* one thread, or no thread to be had: run it here */
    }
  }
  /* what is still in flight: freed by this thread, which allocated none of it */
  for (int h = 0; h < MTFZ_HANDOFF; h++) {
    if (!g_handoff[h].p) continue;
    mtfz_release("free (handed off)", &g_handoff[h]);
    mtheap_free(g_handoff[h].p);
    g_handoff[h].p = NULL;
  }
  if (g_nlive != 0) mtfz_fail("end", 0, "the model still has live blocks");
  mtheap_stats_get(&after);
  /* every block of this run is freed and no other thread runs: the statistics (which count
   * the live blocks they find in the pages) must be back where they started */
  if (after.mallocs - after.frees != before.mallocs - before.frees) {
    char msg[120];
    snprintf(msg, sizeof msg, "the statistics count %" PRId64 " live blocks more than before the run",
             (int64_t)((after.mallocs - after.frees) - (before.mallocs - before.frees)));
    mtfz_fail("end", 0, msg);
  }
  return 0;
}
