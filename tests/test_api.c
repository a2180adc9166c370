/* Unit tests of every malloc-family function's edge cases, with glibc's semantics as the spec.
 *
 * Built three times (see tests/CMakeLists.txt): with -DTEST_PREFIXED against mtheap_api
 * (mtheap_malloc ...), linked with libmtheap.so (malloc ... replaced by the override), and
 * unlinked, run under LD_PRELOAD.  The override builds also check mallopt, malloc_trim,
 * mallinfo2 and that the blocks really come from mtheap (mtheap_owns).
 *
 * Proves: alignment of every block >= 16 bytes; unique non-NULL malloc(0); calloc zeroing (also
 * of recycled, dirty memory); ENOMEM on overflow and impossible sizes, with the old block intact
 * after a failed realloc; posix_memalign's EINVAL cases and alignments 8 B..64 MiB; aligned_alloc,
 * memalign, valloc, pvalloc; usable size bounds for every size class (classes at most 12.5%
 * apart up to 128 KiB, 4 KiB rounding above); realloc preserving contents across every size
 * transition; realloc(p, 0) freeing; free(NULL); the sized frees; the statistics; mtheap_owns;
 * mtheap_stats_print; mtheap_collect returning memory.
 */
#include "testutil.h"

#include <limits.h>
#include <stdalign.h>
#include <stddef.h>
#include <sys/mman.h>

static const size_t page = 4096;
static int static_object;

static bool aligned(const void *p, size_t a) { return ((uintptr_t)p & (a - 1)) == 0; }

/* Sizes are passed through a volatile so the compiler cannot reason about the calls. */
static volatile size_t v_zero = 0;
#define VZ(x) ((size_t)(x) + v_zero)

static void expect_enomem_ptr(const char *what, void *p, int err) {
  if (p != NULL) TFAIL("%s: expected NULL, got %p", what, p);
  if (err != ENOMEM) TFAIL("%s: expected errno ENOMEM, got %d (%s)", what, err, strerror(err));
}

static void test_malloc_basic(void) {
  /* malloc(0): unique, non-NULL, freeable. */
  enum { N = 64 };
  void *z[N];
  for (int i = 0; i < N; i++) {
    z[i] = T_MALLOC(VZ(0));
    TCHECKF(z[i] != NULL, "malloc(0) #%d returned NULL", i);
    for (int j = 0; j < i; j++) TCHECKF(z[i] != z[j], "malloc(0) returned %p twice", z[i]);
  }
  for (int i = 0; i < N; i++) T_FREE(z[i]);

  T_FREE(NULL);  /* must be a no-op */
  TCHECK(T_USABLE_SIZE(NULL) == 0);

  /* Alignment and usable size for a spread of sizes, with all blocks live at once so that
   * overlapping blocks would show as pattern corruption. */
  enum { M = 512 };
  void *b[M];
  size_t sz[M];
  for (int i = 0; i < M; i++) {
    sz[i] = i < 300 ? (size_t)i + 1 : ((size_t)1 << (i % 22)) + (size_t)i;
    b[i] = T_MALLOC(VZ(sz[i]));
    TCHECKF(b[i] != NULL, "malloc(%zu) failed", sz[i]);
    if (sz[i] >= 16) TCHECKF(aligned(b[i], 16), "malloc(%zu) = %p not 16-aligned", sz[i], b[i]);
    else if (sz[i] >= 8) TCHECKF(aligned(b[i], 8), "malloc(%zu) = %p not 8-aligned", sz[i], b[i]);
    size_t u = T_USABLE_SIZE(b[i]);
    TCHECKF(u >= sz[i], "usable_size(malloc(%zu)) = %zu", sz[i], u);
    sz[i] = u;  /* the whole usable size is the caller's to write */
    th_fill(b[i], sz[i]);
  }
  for (int i = 0; i < M; i++) {
    th_verify(b[i], sz[i]);
    T_FREE(b[i]);
  }
}

static void test_impossible_sizes(void) {
  static const size_t bad[] = {SIZE_MAX,      SIZE_MAX - 1,        SIZE_MAX - 4096,
                               SIZE_MAX / 2,  SIZE_MAX / 2 + 1,    (size_t)PTRDIFF_MAX + 1,
                               (size_t)1 << 62, (size_t)1 << 56,   (size_t)1 << 48};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char what[96];
    size_t n = VZ(bad[i]);
    errno = 0;
    void *p = T_MALLOC(n);
    snprintf(what, sizeof what, "malloc(%#zx)", n);
    expect_enomem_ptr(what, p, errno);

    errno = 0;
    p = T_CALLOC(1, n);
    snprintf(what, sizeof what, "calloc(1, %#zx)", n);
    expect_enomem_ptr(what, p, errno);

    errno = 0;
    p = T_ALIGNED_ALLOC(64, n);
    snprintf(what, sizeof what, "aligned_alloc(64, %#zx)", n);
    expect_enomem_ptr(what, p, errno);

    /* Rounding up to the alignment or the page must not wrap around to a small size. */
    errno = 0;
    p = T_MEMALIGN(4096, n);
    snprintf(what, sizeof what, "memalign(4096, %#zx)", n);
    expect_enomem_ptr(what, p, errno);

    errno = 0;
    p = T_VALLOC(n);
    snprintf(what, sizeof what, "valloc(%#zx)", n);
    expect_enomem_ptr(what, p, errno);

    errno = 0;
    p = T_PVALLOC(n);
    snprintf(what, sizeof what, "pvalloc(%#zx)", n);
    expect_enomem_ptr(what, p, errno);

    void *out = (void *)&static_object;
    int r = T_POSIX_MEMALIGN(&out, 64, n);
    TCHECKF(r == ENOMEM, "posix_memalign(64, %#zx) returned %d, want ENOMEM", n, r);
    TCHECKF(out == (void *)&static_object || out == NULL, "posix_memalign failure set *out=%p", out);
  }

  /* calloc / reallocarray overflow of count*size. */
  static const size_t pairs[][2] = {{SIZE_MAX, 2}, {2, SIZE_MAX}, {(size_t)1 << 32, (size_t)1 << 32},
                                    {SIZE_MAX / 2 + 1, 2}, {((size_t)1 << 33) + 1, (size_t)1 << 31},
                                    {SIZE_MAX, SIZE_MAX}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    char what[96];
    size_t a = VZ(pairs[i][0]), b = VZ(pairs[i][1]);
    errno = 0;
    void *p = T_CALLOC(a, b);
    snprintf(what, sizeof what, "calloc(%#zx, %#zx)", a, b);
    expect_enomem_ptr(what, p, errno);

    errno = 0;
    p = T_REALLOCARRAY(NULL, a, b);
    snprintf(what, sizeof what, "reallocarray(NULL, %#zx, %#zx)", a, b);
    expect_enomem_ptr(what, p, errno);

    /* A failed reallocarray/realloc leaves the old block allocated and unchanged. */
    void *old = T_MALLOC(VZ(100));
    TCHECK(old != NULL);
    th_fill(old, 100);
    errno = 0;
    p = T_REALLOCARRAY(old, a, b);
    snprintf(what, sizeof what, "reallocarray(p, %#zx, %#zx)", a, b);
    expect_enomem_ptr(what, p, errno);
    th_verify(old, 100);
    errno = 0;
    p = T_REALLOC(old, VZ(SIZE_MAX - i));
    expect_enomem_ptr("realloc(p, SIZE_MAX)", p, errno);
    th_verify(old, 100);
    T_FREE(old);
  }

  /* A large block must survive a failed realloc too. */
  void *big = T_MALLOC(VZ(300000));
  TCHECK(big != NULL);
  th_fill(big, 300000);
  errno = 0;
  void *p = T_REALLOC(big, VZ((size_t)1 << 60));
  expect_enomem_ptr("realloc(large, 1<<60)", p, errno);
  th_verify(big, 300000);
  T_FREE(big);

  /* reallocarray with a product that fits behaves like realloc. */
  void *ra = T_REALLOCARRAY(NULL, VZ(10), VZ(100));
  TCHECK(ra != NULL && T_USABLE_SIZE(ra) >= 1000);
  th_fill(ra, 1000);
  void *rb = T_REALLOCARRAY(ra, VZ(100), VZ(100));
  TCHECK(rb != NULL && T_USABLE_SIZE(rb) >= 10000);
  th_verify_seed(rb, 1000, 1000, th_seed(ra, 1000));
  T_FREE(rb);
}

static void test_calloc(void) {
  /* calloc(0, n) and calloc(n, 0) are like malloc(0). */
  void *a = T_CALLOC(VZ(0), VZ(16)), *b = T_CALLOC(VZ(16), VZ(0));
  TCHECK(a != NULL && b != NULL && a != b);
  T_FREE(a);
  T_FREE(b);

  /* Dirty memory first, so a calloc that skipped zeroing of recycled blocks is caught. */
  static const size_t sizes[] = {1, 16, 100, 1000, 8000, 65536, 200000, (size_t)3 << 20,
                                 (size_t)5 << 20, (size_t)20 << 20};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s];
    int count = n <= 65536 ? 64 : 4;
    void *blk[64];
    for (int i = 0; i < count; i++) {
      blk[i] = T_MALLOC(VZ(n));
      TCHECK(blk[i] != NULL);
      memset(blk[i], 0xA5, T_USABLE_SIZE(blk[i]));
    }
    for (int i = 0; i < count; i++) T_FREE(blk[i]);
    for (int i = 0; i < count; i++) {
      size_t cnt = n >= 8 ? n / 8 : n, each = n >= 8 ? 8 : 1;
      unsigned char *c = T_CALLOC(VZ(cnt), VZ(each));
      TCHECKF(c != NULL, "calloc(%zu, %zu) failed", cnt, each);
      if (n >= 16) TCHECK(aligned(c, 16));
      for (size_t j = 0; j < cnt * each; j++)
        if (c[j]) TFAIL("calloc(%zu, %zu) = %p: byte %zu is 0x%02x", cnt, each, (void *)c, j, c[j]);
      memset(c, 0x5A, cnt * each);
      blk[i] = c;
    }
    for (int i = 0; i < count; i++) T_FREE(blk[i]);
  }
}

static void test_posix_memalign(void) {
  static const size_t inval[] = {0, 1, 2, 3, 4, 5, 6, 7, 12, 24, 48, 100, 4097, 3 * 4096,
                                 ((size_t)1 << 20) + 8, SIZE_MAX};
  for (size_t i = 0; i < sizeof inval / sizeof inval[0]; i++) {
    void *out = (void *)&static_object;
    int r = T_POSIX_MEMALIGN(&out, VZ(inval[i]), VZ(64));
    TCHECKF(r == EINVAL, "posix_memalign(alignment=%zu) returned %d, want EINVAL", inval[i], r);
    TCHECKF(out == (void *)&static_object || out == NULL,
            "posix_memalign(alignment=%zu) failure set *out=%p", inval[i], out);
  }

  /* Up to 64 MiB alignment, with sizes around the alignment; all live at once. */
  enum { MAXB = 27 * 5 };
  void *blk[MAXB];
  size_t bsz[MAXB];
  int nb = 0;
  for (size_t al = sizeof(void *); al <= ((size_t)64 << 20); al *= 2) {
    size_t cand[] = {1, 100, al - 1, al, al + 1};
    for (size_t k = 0; k < 5; k++) {
      size_t n = cand[k] ? cand[k] : 1;
      if (al >= ((size_t)16 << 20) && k >= 3) continue;  /* keeps the test's memory small */
      void *out = NULL;
      int r = T_POSIX_MEMALIGN(&out, VZ(al), VZ(n));
      TCHECKF(r == 0 && out != NULL, "posix_memalign(%zu, %zu) returned %d", al, n, r);
      TCHECKF(aligned(out, al), "posix_memalign(%zu, %zu) = %p misaligned", al, n, out);
      TCHECKF(T_USABLE_SIZE(out) >= n, "posix_memalign(%zu, %zu): usable %zu", al, n, T_USABLE_SIZE(out));
      th_fill(out, n);
      blk[nb] = out;
      bsz[nb++] = n;
    }
  }
  for (int i = 0; i < nb; i++) {
    th_verify(blk[i], bsz[i]);
    T_FREE(blk[i]);
  }

  /* 1 GiB is the largest alignment (address space only); above it, ENOMEM. */
  void *gib = NULL;
  int rg = T_POSIX_MEMALIGN(&gib, VZ((size_t)1 << 30), VZ(100));
  TCHECKF(rg == 0 && gib != NULL && aligned(gib, (size_t)1 << 30), "posix_memalign(1 GiB, 100): %d %p", rg, gib);
  th_fill(gib, 100);
  th_verify(gib, 100);
  T_FREE(gib);
  for (size_t al = (size_t)2 << 30; al <= ((size_t)1 << 62); al <<= 4) {
    void *out = (void *)&static_object;
    int r2 = T_POSIX_MEMALIGN(&out, VZ(al), VZ(100));
    TCHECKF(r2 == ENOMEM, "posix_memalign(%#zx, 100) returned %d, want ENOMEM", al, r2);
    errno = 0;
    void *a2 = T_ALIGNED_ALLOC(VZ(al), VZ(100));
    int e2 = errno;
    char what[64];
    snprintf(what, sizeof what, "aligned_alloc(%#zx, 100)", al);
    expect_enomem_ptr(what, a2, e2);
  }

  /* aligned_alloc and memalign over the same range; memalign's blocks go to free_aligned_sized. */
  for (size_t al = 1; al <= ((size_t)64 << 20); al *= 2) {
    size_t n = al < 4096 ? 3 * al + 5 : 1000;
    void *p = T_ALIGNED_ALLOC(VZ(al), VZ(n));
    TCHECKF(p != NULL && aligned(p, al), "aligned_alloc(%zu, %zu) = %p", al, n, p);
    TCHECK(T_USABLE_SIZE(p) >= n);
    void *q = T_MEMALIGN(VZ(al), VZ(n));
    TCHECKF(q != NULL && aligned(q, al), "memalign(%zu, %zu) = %p", al, n, q);
    TCHECK(T_USABLE_SIZE(q) >= n);
    th_fill(p, n);
    th_fill(q, n);
    th_verify(p, n);
    th_verify(q, n);
    T_FREE_ALIGNED_SIZED(p, al, n);
    T_FREE(q);
  }

  /* An aligned block may be realloc'ed and keeps its contents. */
  void *out = NULL;
  TCHECK(T_POSIX_MEMALIGN(&out, VZ(4096), VZ(5000)) == 0);
  th_fill(out, 5000);
  void *r = T_REALLOC(out, VZ(100000));
  TCHECK(r != NULL);
  th_verify_seed(r, 5000, 5000, th_seed(out, 5000));
  T_FREE(r);
}

static void test_valloc(void) {
  static const size_t sizes[] = {0, 1, 100, 4095, 4096, 4097, 65536, 200000, (size_t)5 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    void *v = T_VALLOC(VZ(n));
    TCHECKF(v != NULL && aligned(v, page), "valloc(%zu) = %p", n, v);
    TCHECK(T_USABLE_SIZE(v) >= n);
    void *pv = T_PVALLOC(VZ(n));
    TCHECKF(pv != NULL && aligned(pv, page), "pvalloc(%zu) = %p", n, pv);
    size_t want = (n + page - 1) & ~(page - 1);  /* glibc: pvalloc(0) is a minimal block */
    size_t u = T_USABLE_SIZE(pv);
    TCHECKF(u >= want, "pvalloc(%zu): usable size %zu, want >= %zu (size rounded to pages)", n, u, want);
    th_fill(v, n);
    th_fill(pv, want);  /* pvalloc promises the whole rounded size */
    th_verify(v, n);
    th_verify(pv, want);
    T_FREE(v);
    T_FREE(pv);
  }
}

/* Size classes: every request fits, and no class wastes more than 12.5% (+16 bytes) up to
 * 128 KiB; above that, usable sizes are rounded to 4 KiB.  A window of recent blocks stays live and
 * filled to their full usable size, so blocks of neighbouring classes must not overlap. */
static void test_size_classes(void) {
  enum { WIN = 64 };
  void *win[WIN] = {0};
  size_t wsz[WIN] = {0};
  unsigned k = 0;
  size_t n = 1;
  while (n <= 200000) {
    void *p = T_MALLOC(VZ(n));
    TCHECKF(p != NULL, "malloc(%zu) failed", n);
    size_t u = T_USABLE_SIZE(p);
    TCHECKF(u >= n, "usable_size(malloc(%zu)) = %zu", n, u);
    if (n < 128) {
      TCHECKF(u < n + 32, "malloc(%zu): usable size %zu", n, u);
    } else if (n <= ((size_t)128 << 10)) {
      TCHECKF((double)u <= (double)n * 1.125 + 16, "malloc(%zu): usable size %zu exceeds n*1.125+16", n, u);
    } else {
      size_t r4k = (n + 4095) & ~(size_t)4095;
      TCHECKF(u == r4k, "malloc(%zu): usable size %zu, want the 4 KiB rounding %zu", n, u, r4k);
    }
    if (n >= 16) TCHECKF(aligned(p, 16), "malloc(%zu) = %p", n, p);
    unsigned slot = k++ % WIN;
    if (win[slot]) {
      th_verify(win[slot], wsz[slot]);
      T_FREE(win[slot]);
    }
    /* Fill all of it for small blocks; sampled patterns (head/tail/page) for the big ones. */
    th_fill(p, u);
    win[slot] = p;
    wsz[slot] = u;
    n += n < 4096 ? 1 : n / 256;
  }
  for (unsigned i = 0; i < WIN; i++)
    if (win[i]) {
      th_verify(win[i], wsz[i]);
      T_FREE(win[i]);
    }
}

/* realloc across tiny -> small -> large (>128 KiB) -> huge (>1 MiB) -> back, in both directions,
 * checking at every step that min(old, new) bytes survived. */
static void test_realloc(void) {
  static const size_t seq[] = {
      1, 7, 16, 24, 100, 127, 128, 129, 1000, 1024, 4096, 5000, 40000, 65536, 131072, 131073,
      200000, 300000, (size_t)1 << 20, (size_t)2 << 20, ((size_t)2 << 20) + 1, (size_t)3 << 20,
      ((size_t)4 << 20) + 1, (size_t)5 << 20, (size_t)20 << 20, (size_t)70 << 20,
      ((size_t)70 << 20) - 1, (size_t)20 << 20, (size_t)5 << 20, (size_t)4 << 20, (size_t)3 << 20,
      (size_t)1 << 20, 300000, 131073, 131072, 65536, 40000, 5000, 4096, 1000, 129, 128, 100, 24,
      16, 7, 1, 70000000, 3, 200000, 17};
  uint64_t seed = 0x1234;
  size_t cur = 0;
  void *p = T_REALLOC(NULL, VZ(seq[0]));  /* realloc(NULL, n) is malloc(n) */
  TCHECK(p != NULL);
  cur = seq[0];
  th_fill_seed(p, cur, seed);
  for (size_t i = 1; i < sizeof seq / sizeof seq[0]; i++) {
    size_t n = seq[i];
    void *q = T_REALLOC(p, VZ(n));
    TCHECKF(q != NULL, "realloc(%p, %zu -> %zu) failed", p, cur, n);
    TCHECKF(T_USABLE_SIZE(q) >= n, "realloc to %zu: usable %zu", n, T_USABLE_SIZE(q));
    if (n >= 16) TCHECK(aligned(q, 16));
    size_t keep = cur < n ? cur : n;
    /* Sampled patterns of a big block are not a prefix-closed set; compare what both cover. */
    th_verify_seed(q, keep, cur, seed);
    seed = th_mix64(seed + i);
    th_fill_seed(q, n, seed);
    p = q;
    cur = n;
  }
  T_FREE(p);

  /* Growing a huge block moves no bytes by copying: in place, or pages moved with mremap. */
  struct mtheap_stats h0, h1;
  void *hb = T_MALLOC(VZ((size_t)8 << 20));
  TCHECK(hb != NULL);
  th_fill_seed(hb, (size_t)8 << 20, 77);
  void *spacer = T_MALLOC(VZ((size_t)8 << 20));  /* may sit right after hb: then mremap */
  th_stats(&h0);
  void *hb2 = T_REALLOC(hb, VZ((size_t)40 << 20));
  th_stats(&h1);
  TCHECK(hb2 != NULL);
  th_verify_seed(hb2, (size_t)8 << 20, (size_t)8 << 20, 77);
  TCHECKF(h1.reallocs_in_place + h1.reallocs_mremap >= h0.reallocs_in_place + h0.reallocs_mremap + 1,
          "realloc of a huge block 8 -> 40 MiB was neither in place (%" PRIu64 " -> %" PRIu64
          ") nor by mremap (%" PRIu64 " -> %" PRIu64 ")", h0.reallocs_in_place, h1.reallocs_in_place,
          h0.reallocs_mremap, h1.reallocs_mremap);
  T_FREE(hb2);
  T_FREE(spacer);

  /* A huge block's usable size is its request rounded to 4 KiB, not the rest of its run of
   * 2 MiB slots (programs that count malloc_usable_size -- ruby's GC -- saw up to 1.6x the
   * bytes asked), and follows it through in-place reallocs; in_use counts it the same way. */
  {
    static const size_t sizes[] = {((size_t)5 << 19) + 1, ((size_t)12 << 20) - 100, (size_t)3 << 20};
    th_stats(&h0);
    void *h = T_MALLOC(VZ(sizes[0]));
    TCHECK(h != NULL);
    th_fill_seed(h, sizes[0], 81);
    th_stats(&h1);
    TCHECKF(h1.in_use - h0.in_use < sizes[0] + 4096, "a %zu-byte huge block adds %zu bytes in use",
            sizes[0], h1.in_use - h0.in_use);
    size_t kept = sizes[0];
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      void *h2 = T_REALLOC(h, VZ(sizes[i]));
      TCHECK(h2 != NULL);
      h = h2;
      size_t u = T_USABLE_SIZE(h), want = (sizes[i] + 4095) & ~(size_t)4095;
      TCHECKF(u == want, "huge block of %zu bytes: usable %zu, want %zu (rounded to 4 KiB)", sizes[i], u, want);
      size_t keep = kept < sizes[i] ? kept : sizes[i];
      th_verify_seed(h, keep, kept, 81 + i);
      th_fill_seed(h, sizes[i], 82 + i);
      kept = sizes[i];
    }
    T_FREE(h);
  }

  /* A large block (128 KiB..2 MiB) is resized in its span: shrinking gives the tail slices
   * back and never moves; growing over the slices it just gave back cannot move either (this
   * thread allocated nothing in between), so no byte is copied either way. */
  void *lb = T_MALLOC(VZ((size_t)1 << 20));
  TCHECK(lb != NULL);
  th_fill_seed(lb, (size_t)1 << 20, 91);
  th_stats(&h0);
  void *lb2 = T_REALLOC(lb, VZ(200000));
  TCHECKF(lb2 == lb, "shrinking a 1 MiB block to 200000 bytes moved it (%p -> %p)", lb, lb2);
  /* a large block's usable size is its request rounded to 4 KiB (not the span's 32 KiB
   * slices: realloc copies usable bytes, so slack there would be copied on every move) */
  TCHECKF(T_USABLE_SIZE(lb2) == (size_t)200704, "shrunk large block: usable %zu, want 200704 "
          "(200000 rounded to 4 KiB)", T_USABLE_SIZE(lb2));
  th_verify_seed(lb2, 200000, (size_t)1 << 20, 91);
  void *lb3 = T_REALLOC(lb2, VZ((size_t)1 << 20));
  TCHECKF(lb3 == lb, "growing back over its own freed tail moved the block (%p -> %p)", lb, lb3);
  TCHECKF(T_USABLE_SIZE(lb3) == (size_t)1 << 20, "regrown large block: usable %zu", T_USABLE_SIZE(lb3));
  th_verify_seed(lb3, 200000, (size_t)1 << 20, 91);
  th_fill_seed(lb3, (size_t)1 << 20, 92);
  th_stats(&h1);
  TCHECKF(h1.reallocs_in_place >= h0.reallocs_in_place + 2, "large in-place reallocs not counted "
          "(%" PRIu64 " -> %" PRIu64 ")", h0.reallocs_in_place, h1.reallocs_in_place);
  TCHECKF(h1.in_use <= h0.in_use, "in_use grew across shrink+regrow: %zu -> %zu", h0.in_use, h1.in_use);
  th_verify_seed(lb3, (size_t)1 << 20, (size_t)1 << 20, 92);
  T_FREE(lb3);

  /* A growth chain: a large block that realloc had to move gets room behind it, so the next
   * steps grow in place even though the program allocates a block of the same size after every
   * step (without the room, best fit puts that block right behind and every step copies). */
  {
    enum { STEPS = 6 };
    void *spacers[STEPS + 1];
    size_t n = (size_t)160 << 10;
    void *gb = T_MALLOC(VZ(n));
    TCHECK(gb != NULL);
    th_fill_seed(gb, n, 93);
    spacers[0] = T_MALLOC(VZ(n));
    th_stats(&h0);
    unsigned moved = 0;
    for (int i = 1; i <= STEPS; i++) {
      size_t m = n + n / 4;
      void *q = T_REALLOC(gb, VZ(m));
      TCHECK(q != NULL);
      th_verify_seed(q, n, n, 93);
      moved += q != gb;
      fprintf(stderr, "chain %d: %p -> %p (%zu)\n", i, gb, q, m);
      gb = q;
      th_fill_seed(gb, m, 93);
      n = m;
      spacers[i] = T_MALLOC(VZ((size_t)160 << 10));
    }
    th_stats(&h1);
    /* The room covers at least the next step after a move (1.5x against 1.25x steps), so at
     * most every other step moves; without it every step does (the spacer takes the slices
     * behind).  Whether the first step grows in place depends on what the cases above left
     * behind the block (a span pinned by a block cache, bcache.c, is enough): not checked. */
    TCHECKF(moved <= STEPS / 2, "a growth chain of %d steps (160 KiB by 1/4) moved %u times: no room was "
            "kept behind the moved block", STEPS, moved);
    TCHECKF(h1.reallocs_in_place == h0.reallocs_in_place + STEPS - moved, "in-place growth not counted "
            "(%" PRIu64 " -> %" PRIu64 ")", h0.reallocs_in_place, h1.reallocs_in_place);
    TCHECKF(T_USABLE_SIZE(gb) == ((n + 4095) & ~(size_t)4095), "grown block: usable %zu for %zu",
            T_USABLE_SIZE(gb), n);
    T_FREE(gb);
    for (int i = 0; i <= STEPS; i++) T_FREE(spacers[i]);
  }

  /* realloc(p, 0) frees p and returns NULL, like glibc. */
  struct mtheap_stats s0, s1;
  void *z = T_MALLOC(VZ(1000));
  TCHECK(z != NULL);
  th_stats(&s0);
  errno = 0;
  void *r = T_REALLOC(z, VZ(0));
  TCHECKF(r == NULL, "realloc(p, 0) returned %p, glibc returns NULL", r);
  th_stats(&s1);
  TCHECKF(s1.frees >= s0.frees + 1, "realloc(p, 0) did not free p (frees %" PRIu64 " -> %" PRIu64 ")",
          s0.frees, s1.frees);
  TCHECKF(s1.in_use + 1000 <= s0.in_use, "realloc(p, 0): in_use %zu -> %zu", s0.in_use, s1.in_use);

  /* A block of a size class grown 64 bytes at a time from 1 KiB to 64 KiB (a string appended
   * to): each move takes a quarter more than asked (src/alloc.c), so the chain moves about
   * three times per doubling, 15 in all; with classes an eighth apart and no headroom it moved
   * at each class, 48 times.  A block that doubles gets what it asks for. */
  {
    unsigned char *a = T_MALLOC(VZ(1024));
    TCHECK(a != NULL);
    unsigned moves = 0;
    for (size_t len = 1024 + 64; len <= ((size_t)64 << 10); len += 64) {
      unsigned char *na = T_REALLOC(a, VZ(len));
      TCHECK(na != NULL);
      moves += na != a;
      a = na;
      a[len - 1] = (unsigned char)len;
    }
    printf("append 64 B at a time, 1 -> 64 KiB: %u moves\n", moves);
    TCHECKF(moves <= 26, "a block appended to 64 bytes at a time moved %u times from 1 to 64 KiB", moves);
    size_t u = T_USABLE_SIZE(a);
    unsigned char *d = T_REALLOC(a, VZ(2 * u));
    TCHECK(d != NULL);
    TCHECKF(T_USABLE_SIZE(d) < 2 * u + 2 * u / 8, "a block doubled to %zu bytes got %zu: headroom for a jump",
            2 * u, T_USABLE_SIZE(d));
    T_FREE(d);
  }

  /* Shrinking in place or not, the prefix survives; growing a block many times in small steps
   * (the way string builders do) keeps everything. */
  unsigned char *g = NULL;
  size_t gl = 0;
  for (size_t step = 0; step < 3000; step++) {
    size_t nl = gl + 1 + (step % 97) * 13;
    unsigned char *ng = T_REALLOC(g, VZ(nl));
    TCHECK(ng != NULL);
    for (size_t j = 0; j < gl; j += 1 + j / 64)
      if (ng[j] != (unsigned char)(j * 7 + 1)) TFAIL("growing realloc lost byte %zu of %zu", j, gl);
    for (size_t j = gl; j < nl; j++) ng[j] = (unsigned char)(j * 7 + 1);
    g = ng;
    gl = nl;
  }
  T_FREE(g);
}

static void test_sized_free(void) {
  struct mtheap_stats s0, s1;
  th_stats(&s0);
  static const size_t sizes[] = {1, 16, 100, 1000, 4096, 70000, 200000, (size_t)6 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    void *p = T_MALLOC(VZ(sizes[i]));
    TCHECK(p != NULL);
    th_fill(p, sizes[i]);
    th_verify(p, sizes[i]);
    T_FREE_SIZED(p, sizes[i]);
    void *q = NULL;
    TCHECK(T_POSIX_MEMALIGN(&q, VZ(256), VZ(sizes[i])) == 0);
    th_fill(q, sizes[i]);
    T_FREE_ALIGNED_SIZED(q, 256, sizes[i]);
    void *a = T_ALIGNED_ALLOC(VZ(65536), VZ(sizes[i]));
    TCHECK(a != NULL && aligned(a, 65536));
    T_FREE_ALIGNED_SIZED(a, 65536, sizes[i]);
  }
  th_stats(&s1);
  TCHECKF(s1.frees >= s0.frees + 24, "24 sized frees counted as %" PRIu64, s1.frees - s0.frees);
  T_FREE_SIZED(NULL, 0);
}

static void *thread_alloc_one(void *arg) {
  void *p = T_MALLOC(VZ(100));
  TCHECK(p != NULL);
  *(void **)arg = p;
  return NULL;
}

static void test_stats_and_owns(void) {
  th_require_mtheap_extras();
  struct mtheap_stats s0, s1, s2;

  int local = 0;
  TCHECK(!mtheap_owns(&local));
  TCHECK(!mtheap_owns(&static_object));
  TCHECK(!mtheap_owns((void *)test_stats_and_owns));
  TCHECK(!mtheap_owns(NULL));
  void *mm = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  TCHECK(mm != MAP_FAILED);
  TCHECK(!mtheap_owns(mm));
  TCHECK(!mtheap_owns((char *)mm + 12345));
  munmap(mm, 1 << 20);

  /* N mallocs: counters and in_use move by at least that much. */
  enum { N = 1000, SZ = 1024 };
  static void *blk[N];
  th_stats(&s0);
  for (int i = 0; i < N; i++) {
    blk[i] = T_MALLOC(VZ(SZ));
    TCHECK(blk[i] != NULL);
    TCHECK(mtheap_owns(blk[i]));
    TCHECK(mtheap_owns((char *)blk[i] + SZ - 1));
  }
  th_stats(&s1);
  TCHECKF(s1.mallocs >= s0.mallocs + N, "mallocs %" PRIu64 " -> %" PRIu64 " after %d mallocs",
          s0.mallocs, s1.mallocs, N);
  TCHECKF(s1.in_use >= s0.in_use + (size_t)N * SZ, "in_use %zu -> %zu after %d bytes", s0.in_use,
          s1.in_use, N * SZ);
  TCHECK(s1.in_use_peak >= s1.in_use);
  TCHECK(s1.pages_in_use >= (size_t)N * SZ);
  TCHECK(s1.reserved >= s1.committed || s1.committed == 0);
  TCHECK(s1.reserved >= s1.pages_in_use);
  TCHECK(s1.resident > 0);
  for (int i = 0; i < N; i++) T_FREE(blk[i]);
  th_stats(&s2);
  TCHECKF(s2.frees >= s1.frees + N, "frees %" PRIu64 " -> %" PRIu64, s1.frees, s2.frees);
  TCHECKF(s2.in_use + (size_t)N * SZ <= s1.in_use, "in_use %zu -> %zu after freeing %d bytes",
          s1.in_use, s2.in_use, N * SZ);

  /* The per-class table: the 1 KiB class saw our N blocks. */
  bool found = false;
  for (int c = 0; c < MTHEAP_NUM_CLASSES; c++) {
    const struct mtheap_class_stats *cs = &s2.classes[c];
    if (cs->block_size == 0) continue;
    TCHECK(cs->frees <= cs->mallocs);
    if (cs->block_size == SZ) {
      found = true;
      TCHECKF(cs->mallocs >= N, "class %d (%zu B): mallocs %" PRIu64, c, cs->block_size, cs->mallocs);
    }
  }
  TCHECKF(found, "no size class of %d bytes in mtheap_stats.classes", SZ);

  /* Every kind of block is ours. */
  void *large = T_MALLOC(VZ(300000)), *al = T_ALIGNED_ALLOC(VZ(1 << 20), VZ(10));
  TCHECK(large && al && mtheap_owns(large) && mtheap_owns(al));

  /* A 16 MiB block is a huge block. */
  th_stats(&s0);
  void *huge = T_MALLOC(VZ((size_t)16 << 20));
  TCHECK(huge != NULL && mtheap_owns(huge) && mtheap_owns((char *)huge + (16 << 20) - 1));
  th_stats(&s1);
  TCHECKF(s1.huge_mallocs >= s0.huge_mallocs + 1, "huge_mallocs %" PRIu64 " -> %" PRIu64,
          s0.huge_mallocs, s1.huge_mallocs);
  TCHECK(s1.in_use >= s0.in_use + ((size_t)16 << 20));
  T_FREE(huge);
  T_FREE(large);
  T_FREE(al);

  /* A new thread that allocates is seen. */
  th_stats(&s0);
  void *tp = NULL;
  pthread_t t;
  th_thread(&t, thread_alloc_one, &tp);
  th_join(t);
  th_stats(&s1);
  TCHECKF(s1.threads_seen >= s0.threads_seen + 1, "threads_seen %" PRIu64 " -> %" PRIu64,
          s0.threads_seen, s1.threads_seen);
  TCHECK(mtheap_owns(tp));
  T_FREE(tp);  /* a block of an exited thread, freed by another */

  /* The report goes to the FILE given. */
  FILE *f = tmpfile();
  TCHECK(f != NULL);
  mtheap_stats_print(f);
  long len = ftell(f);
  TCHECKF(len > 0, "mtheap_stats_print wrote %ld bytes", len);
  rewind(f);
  char *text = calloc(1, (size_t)len + 1);
  TCHECK(text != NULL);
  TCHECK(fread(text, 1, (size_t)len, f) == (size_t)len);
  TCHECKF(strstr(text, "mtheap") != NULL, "report lacks \"mtheap\": %.200s", text);
  free(text);
  fclose(f);
}

/* Blocks freed by another thread that then goes idle (alive, no more malloc/free) count as
 * freed once their owner has collected: "a thread that only frees never holds memory", and the
 * statistics are exact when the program is quiescent. */
enum { IDLE_N = 32, IDLE_SZ = 4000 };
static void *idle_blocks[IDLE_N];
static _Atomic int idle_state;
static void *idle_freer(void *arg) {
  for (int i = 0; i < IDLE_N; i++) T_FREE(idle_blocks[i]);
  atomic_store(&idle_state, 1);
  while (atomic_load(&idle_state) != 2) th_sleep_ms(1);
  return NULL;
}
static void test_remote_free_idle(void) {
  struct mtheap_stats s0, s1, s2;
  th_stats(&s0);
  for (int i = 0; i < IDLE_N; i++) {
    idle_blocks[i] = T_MALLOC(VZ(IDLE_SZ));
    TCHECK(idle_blocks[i] != NULL);
  }
  th_stats(&s1);
  pthread_t t;
  th_thread(&t, idle_freer, NULL);
  while (atomic_load(&idle_state) != 1) th_sleep_ms(1);
  mtheap_collect(false);
  th_stats(&s2);
  atomic_store(&idle_state, 2);
  th_join(t);
  TCHECKF(s2.frees >= s1.frees + IDLE_N && s2.in_use + (size_t)IDLE_N * IDLE_SZ <= s1.in_use,
          "%d blocks freed by a thread that then idles: frees %" PRIu64 " -> %" PRIu64
          ", in_use %zu -> %zu (the freeing thread holds them back)",
          IDLE_N, s1.frees, s2.frees, s1.in_use, s2.in_use);
}

/* mtheap_collect(true) hands freed memory back at once: RSS and the purged counter move. */
static void test_collect(void) {
  th_require_mtheap_extras();
  enum { NB = 256 };
  static void *blk[NB];
  for (int i = 0; i < NB; i++) {
    blk[i] = T_MALLOC(VZ(256 << 10));
    TCHECK(blk[i] != NULL);
    memset(blk[i], 1, 256 << 10);
  }
  void *huge = T_MALLOC(VZ((size_t)32 << 20));
  TCHECK(huge != NULL);
  memset(huge, 1, (size_t)32 << 20);
  size_t live = (size_t)NB * (256 << 10) + ((size_t)32 << 20); /* 96 MiB */
  size_t rss_full = th_rss();
  for (int i = 0; i < NB; i++) T_FREE(blk[i]);
  T_FREE(huge);
  struct mtheap_stats s0, s1;
  th_stats(&s0);
  mtheap_collect(true);
  th_stats(&s1);
  size_t rss_after = th_rss();
  TCHECKF(rss_after + live / 2 <= rss_full,
          "mtheap_collect(true): RSS %zu MiB -> %zu MiB after freeing %zu MiB", rss_full >> 20,
          rss_after >> 20, live >> 20);
  TCHECKF(s1.purged >= s0.purged + live / 2, "purged %zu -> %zu", s0.purged, s1.purged);
  mtheap_collect(false);
  void *p = T_MALLOC(VZ(256 << 10));  /* and the heap still works afterwards */
  TCHECK(p != NULL);
  th_fill(p, 256 << 10);
  th_verify(p, 256 << 10);
  T_FREE(p);
}

#ifndef TEST_PREFIXED
static void call_malloc_stats(void *arg) { malloc_stats(); }

/* Only the override provides these glibc extras. */
static void test_glibc_extras(void) {
  TCHECK(&free_sized != NULL && &free_aligned_sized != NULL);
  TCHECK(mallopt(M_ARENA_MAX, 4) == 1);
  TCHECK(mallopt(M_TRIM_THRESHOLD, 256 << 10) == 1);
  TCHECK(mallopt(M_MMAP_THRESHOLD, 256 << 10) == 1);
  /* "accepts every parameter and ignores them" */
  TCHECK(mallopt(M_MXFAST, 0) == 1 && mallopt(M_PERTURB, 0xAA) == 1 && mallopt(M_TOP_PAD, 1 << 20) == 1);
  TCHECK(mallopt(-12345, 7) == 1);

  /* malloc_stats() prints mtheap's report on stderr. */
  static th_child_t ch;
  th_run_child(call_malloc_stats, NULL, 10, &ch);
  TCHECKF(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0 && strstr(ch.err, "mtheap") != NULL,
          "malloc_stats(): status %d, stderr: %.300s", ch.status, ch.err);
  (void)malloc_trim(1 << 20);

  /* malloc_trim, like mtheap_collect(true), hands free memory back at once (README). */
  enum { NT = 128 };
  static void *tb[NT];
  for (int i = 0; i < NT; i++) {
    tb[i] = malloc(VZ(512 << 10));
    TCHECK(tb[i] != NULL);
    memset(tb[i], 7, 512 << 10);
  }
  size_t rss_full = th_rss();
  for (int i = 0; i < NT; i++) free(tb[i]);
  (void)malloc_trim(0);
  size_t rss_trim = th_rss();
  TCHECKF(rss_trim + ((size_t)NT * (512 << 10)) / 2 <= rss_full,
          "malloc_trim(0): RSS %zu MiB -> %zu MiB after freeing 64 MiB", rss_full >> 20, rss_trim >> 20);

  struct mallinfo2 m0 = mallinfo2();
  enum { N = 10240 };
  static void *blk[N];
  for (int i = 0; i < N; i++) {
    blk[i] = malloc(VZ(1024));
    TCHECK(blk[i] != NULL);
  }
  struct mallinfo2 m1 = mallinfo2();
  TCHECKF(m1.uordblks >= m0.uordblks + (size_t)N * 1024, "mallinfo2.uordblks %zu -> %zu after 10 MiB",
          m0.uordblks, m1.uordblks);
  void *ten = malloc(VZ((size_t)10 << 20));
  TCHECK(ten != NULL);
  struct mallinfo2 m2 = mallinfo2();
  TCHECKF(m2.uordblks + m2.hblkhd >= m1.uordblks + m1.hblkhd + ((size_t)10 << 20),
          "mallinfo2 did not count a 10 MiB block: uordblks %zu -> %zu, hblkhd %zu -> %zu",
          m1.uordblks, m2.uordblks, m1.hblkhd, m2.hblkhd);
  /* The old int-sized mallinfo agrees (truncated like glibc's, or saturated). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  struct mallinfo mo = mallinfo();
#pragma GCC diagnostic pop
  TCHECKF(mo.uordblks != 0 && ((size_t)(unsigned)mo.uordblks == (m2.uordblks & 0xffffffffu) ||
                                mo.uordblks == INT_MAX),
          "mallinfo().uordblks %d vs mallinfo2().uordblks %zu", mo.uordblks, m2.uordblks);
  /* Plausible: nothing is near the size of the address space. */
  TCHECK(m2.uordblks < ((size_t)1 << 44) && m2.fordblks < ((size_t)1 << 44) &&
         m2.arena < ((size_t)1 << 44) && m2.hblkhd < ((size_t)1 << 44));
  free(ten);
  for (int i = 0; i < N; i++) free(blk[i]);
  struct mallinfo2 m3 = mallinfo2();
  TCHECKF(m3.uordblks + (size_t)N * 1024 <= m1.uordblks, "mallinfo2.uordblks %zu -> %zu after free",
          m1.uordblks, m3.uordblks);

  /* The process's malloc is mtheap's. */
  void *p = malloc(VZ(10)), *q = calloc(1, VZ(10)), *r = realloc(NULL, VZ(10)), *s = NULL;
  TCHECK(posix_memalign(&s, 64, 10) == 0);
  void *u = strdup("abc");
  TCHECK(mtheap_owns(p) && mtheap_owns(q) && mtheap_owns(r) && mtheap_owns(s) && mtheap_owns(u));
  TCHECK(malloc_usable_size(p) == mtheap_usable_size(p));
  free(p); free(q); free(r); free(s); free(u);
}
#endif

int main(void) {
  th_watchdog(100, "test_api");
  th_require_mtheap_extras();
  test_malloc_basic();
  test_impossible_sizes();
  test_calloc();
  test_posix_memalign();
  test_valloc();
  test_size_classes();
  test_realloc();
  test_sized_free();
  test_stats_and_owns();
  test_collect();
#ifndef TEST_PREFIXED
  test_glibc_extras();
#endif
  test_remote_free_idle();
  printf("test_api (%s): all checks passed\n", T_API_NAME);
  return 0;
}
