/* Shared helpers for the mtheap-bench workloads: option parsing, block patterns, timing and
 * the RESULT line.  Header-only so each workload stays a single translation unit that links
 * nothing but libc (the allocator under test is swapped in with LD_PRELOAD).
 *
 * Conventions every workload follows (the driver and the tests rely on them):
 *   exit 0  ran and verified everything, printed exactly one RESULT line per measured case
 *   exit 2  bad command line (message on stderr)
 *   exit 3  self-check failed: a block did not hold what was written into it ("FAIL" line)
 *   exit 4  the allocator returned NULL or another resource failed
 */
#ifndef MTHEAP_BENCH_COMMON_H
#define MTHEAP_BENCH_COMMON_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_EXIT_USAGE 2
#define BENCH_EXIT_SELFCHECK 3
#define BENCH_EXIT_RESOURCE 4

/* ------------------------------------------------------------------ options */

enum bench_opt_kind { BOPT_INT, BOPT_FLAG, BOPT_STR };

struct bench_opt {
  char sname;             /* short flag letter, 0 for none */
  const char *lname;      /* long name without "--" */
  enum bench_opt_kind kind;
  long long *ival;        /* BOPT_INT and BOPT_FLAG (set to 1) */
  const char **sval;      /* BOPT_STR */
  long long min, max;     /* inclusive bounds for BOPT_INT */
  const char *help;
};

static const char *bench_prog = "bench";

static inline void bench_usage(FILE *f, const char *desc, const struct bench_opt *o) {
  fprintf(f, "usage: %s [options]\n%s\n\noptions:\n", bench_prog, desc);
  for (; o->lname; o++) {
    char names[64];
    if (o->sname)
      snprintf(names, sizeof names, "-%c, --%s", o->sname, o->lname);
    else
      snprintf(names, sizeof names, "    --%s", o->lname);
    const char *arg = o->kind == BOPT_INT ? " N" : o->kind == BOPT_STR ? " S" : "";
    char left[80];
    snprintf(left, sizeof left, "%s%s", names, arg);
    if (o->kind == BOPT_INT)
      fprintf(f, "  %-28s %s (default %lld, %lld..%lld)\n", left, o->help, *o->ival, o->min,
              o->max);
    else if (o->kind == BOPT_STR)
      fprintf(f, "  %-28s %s (default \"%s\")\n", left, o->help, *o->sval ? *o->sval : "");
    else
      fprintf(f, "  %-28s %s\n", left, o->help);
  }
  fprintf(f, "  %-28s %s\n", "-h, --help", "show this help and exit");
  fprintf(f,
          "\nPrints one line 'RESULT workload=... threads=... metric=... value=... unit=...'.\n"
          "Exit status: 0 ok, 2 bad usage, 3 self-check failed (corrupted block), 4 out of "
          "memory.\n");
}

static inline void bench_usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: error: ", bench_prog);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n%s: try '%s --help'\n", bench_prog, bench_prog);
  va_end(ap);
  exit(BENCH_EXIT_USAGE);
}

static inline void bench_set(const struct bench_opt *o, const char *shown, const char *v) {
  if (o->kind == BOPT_STR) {
    *o->sval = v;
    return;
  }
  errno = 0;
  char *end = NULL;
  long long x = strtoll(v, &end, 0);
  /* Accept k/m/g suffixes so sizes can be written the way people think of them. */
  if (end && end != v && (*end == 'k' || *end == 'K' || *end == 'm' || *end == 'M' ||
                          *end == 'g' || *end == 'G') && end[1] == 0) {
    int sh = (*end == 'k' || *end == 'K') ? 10 : (*end == 'm' || *end == 'M') ? 20 : 30;
    if (x > (LLONG_MAX >> sh) || x < -(LLONG_MAX >> sh))
      bench_usage_error("value '%s' for %s is out of range", v, shown);
    x <<= sh;
    end++;
  }
  if (errno || !end || end == v || *end)
    bench_usage_error("option %s needs an integer, got '%s'", shown, v);
  if (x < o->min || x > o->max)
    bench_usage_error("option %s must be between %lld and %lld, got %lld", shown, o->min, o->max,
                      x);
  *o->ival = x;
}

/* Parses argv against the table; exits 0 on --help, 2 on anything it does not understand. */
static inline void bench_parse(int argc, char **argv, const char *prog, const char *desc,
                        const struct bench_opt *opts) {
  bench_prog = prog;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      bench_usage(stdout, desc, opts);
      exit(0);
    }
    const struct bench_opt *o = NULL;
    const char *val = NULL;
    char shown[80];
    if (a[0] == '-' && a[1] == '-' && a[2]) {
      const char *name = a + 2;
      const char *eq = strchr(name, '=');
      size_t len = eq ? (size_t)(eq - name) : strlen(name);
      for (const struct bench_opt *p = opts; p->lname; p++)
        if (strlen(p->lname) == len && !strncmp(p->lname, name, len)) o = p;
      snprintf(shown, sizeof shown, "--%.*s", (int)len, name);
      if (!o) bench_usage_error("unknown option '%s'", shown);
      if (eq) {
        if (o->kind == BOPT_FLAG) bench_usage_error("option %s takes no value", shown);
        val = eq + 1;
      }
    } else if (a[0] == '-' && a[1] && a[1] != '-') {
      for (const struct bench_opt *p = opts; p->lname; p++)
        if (p->sname == a[1]) o = p;
      snprintf(shown, sizeof shown, "-%c", a[1]);
      if (!o) bench_usage_error("unknown option '%s'", a);
      if (a[2]) {
        if (o->kind == BOPT_FLAG) bench_usage_error("option %s takes no value", shown);
        val = a + 2;
      }
    } else {
      bench_usage_error("unexpected argument '%s'", a);
    }
    if (o->kind == BOPT_FLAG) {
      *o->ival = 1;
      continue;
    }
    if (!val) {
      if (i + 1 >= argc) bench_usage_error("option %s needs a value", shown);
      val = argv[++i];
    }
    bench_set(o, shown, val);
  }
}

/* ------------------------------------------------------------------ time */

static inline double bench_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void bench_sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
  }
}

/* ------------------------------------------------------------------ random */

/* splitmix64: cheap, stateless mixing so block keys differ for every (thread, index, round). */
static inline uint64_t bench_mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Per-thread generator: no locks (rand() takes one, which would measure libc, not malloc). */
struct bench_rng { uint64_t s; };
static inline uint64_t bench_rand(struct bench_rng *r) {
  r->s ^= r->s << 13;
  r->s ^= r->s >> 7;
  r->s ^= r->s << 17;
  return r->s;
}
static inline void bench_rng_seed(struct bench_rng *r, uint64_t seed) {
  r->s = bench_mix(seed) | 1;
}
/* Uniform in [lo, hi]. */
static inline size_t bench_range(struct bench_rng *r, size_t lo, size_t hi) {
  return lo + (size_t)(bench_rand(r) % (uint64_t)(hi - lo + 1));
}

/* ------------------------------------------------------------------ block pattern */

/* The workload's key for a block is kept outside the block (in the workload's own records),
 * so a block handed out twice, overlapping another, or scribbled on shows up as a mismatch.
 * Only the head, the tail and one word per page are written: that touches every page (as a
 * real program would) without turning large-block workloads into memset benchmarks. */
#define BENCH_EDGE 64
#define BENCH_PAGE 4096

/* The pattern is one 64-bit word per 8 bytes of the block: the key is hashed once per block
 * and each word is that hash plus a multiple of an odd constant, so filling and checking cost
 * one multiply-add and one 8-byte store or compare per word.  (A full hash per byte made the
 * self-check, not the allocator, the cost of small-block workloads.)  Byte i of the block is
 * byte (i & 7) of word i >> 3 as laid out in memory, so the check is endian-neutral. */
static inline uint64_t bench_key_hash(uint64_t key) { return bench_mix(key); }
static inline uint64_t bench_word(uint64_t kh, size_t w) {
  return kh + (uint64_t)w * 0x9e3779b97f4a7c15ull;
}
static inline unsigned char bench_byte(uint64_t key, size_t off) {
  uint64_t v = bench_word(bench_key_hash(key), off >> 3);
  unsigned char b[8];
  memcpy(b, &v, 8);
  return b[off & 7];
}

/* Fill bytes [a, e) of the block; whole words in the middle, single bytes at ragged ends. */
static inline void bench_fill_range(unsigned char *b, size_t a, size_t e, uint64_t kh) {
  size_t i = a;
  for (; i < e && (i & 7); i++) {
    uint64_t v = bench_word(kh, i >> 3);
    b[i] = ((const unsigned char *)&v)[i & 7];
  }
  for (; i + 8 <= e; i += 8) {
    uint64_t v = bench_word(kh, i >> 3);
    memcpy(b + i, &v, 8);
  }
  for (; i < e; i++) {
    uint64_t v = bench_word(kh, i >> 3);
    b[i] = ((const unsigned char *)&v)[i & 7];
  }
}

static inline void bench_fill(void *p, size_t n, uint64_t key) {
  unsigned char *b = p;
  uint64_t kh = bench_key_hash(key);
  size_t head = n < BENCH_EDGE ? n : BENCH_EDGE;
  bench_fill_range(b, 0, head, kh);
  if (n > BENCH_EDGE) {
    size_t t0 = n - BENCH_EDGE > BENCH_EDGE ? n - BENCH_EDGE : BENCH_EDGE;
    bench_fill_range(b, t0, n, kh);
    for (size_t i = BENCH_PAGE; i + 8 <= t0; i += BENCH_PAGE) bench_fill_range(b, i, i + 8, kh);
  }
}

static inline void bench_fail(const char *workload, const char *fmt, ...) {
  va_list ap;
  char msg[512];
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* One write per stream so the line is not interleaved with other threads' output. */
  fprintf(stdout, "FAIL workload=%s reason=selfcheck %s\n", workload, msg);
  fflush(stdout);
  fprintf(stderr, "%s: FAIL: self-check: %s\n", workload, msg);
  fflush(stderr);
  _exit(BENCH_EXIT_SELFCHECK);
}

static inline void bench_check_at(const unsigned char *b, size_t i, uint64_t key, size_t n,
                                  const char *w) {
  if (b[i] != bench_byte(key, i))
    bench_fail(w, "block %p size %zu corrupted at offset %zu: expected 0x%02x, found 0x%02x",
               (const void *)b, n, i, bench_byte(key, i), b[i]);
}

/* Check bytes [a, e): compare whole words, and on a mismatch find and report the first bad byte. */
static inline void bench_verify_range(const unsigned char *b, size_t a, size_t e, uint64_t key,
                                      uint64_t kh, size_t n, const char *w) {
  size_t i = a;
  for (; i < e && (i & 7); i++) bench_check_at(b, i, key, n, w);
  for (; i + 8 <= e; i += 8) {
    uint64_t v = bench_word(kh, i >> 3), got;
    memcpy(&got, b + i, 8);
    if (__builtin_expect(got != v, 0))
      for (size_t j = i; j < i + 8; j++) bench_check_at(b, j, key, n, w);
  }
  for (; i < e; i++) bench_check_at(b, i, key, n, w);
}

static inline void bench_verify(const void *p, size_t n, uint64_t key, const char *w) {
  const unsigned char *b = p;
  uint64_t kh = bench_key_hash(key);
  size_t head = n < BENCH_EDGE ? n : BENCH_EDGE;
  bench_verify_range(b, 0, head, key, kh, n, w);
  if (n > BENCH_EDGE) {
    size_t t0 = n - BENCH_EDGE > BENCH_EDGE ? n - BENCH_EDGE : BENCH_EDGE;
    bench_verify_range(b, t0, n, key, kh, n, w);
    for (size_t i = BENCH_PAGE; i + 8 <= t0; i += BENCH_PAGE)
      bench_verify_range(b, i, i + 8, key, kh, n, w);
  }
}

static inline void bench_oom(const char *workload, size_t n) {
  fprintf(stdout, "FAIL workload=%s reason=oom malloc(%zu) returned NULL\n", workload, n);
  fflush(stdout);
  fprintf(stderr, "%s: FAIL: malloc(%zu) returned NULL\n", workload, n);
  _exit(BENCH_EXIT_RESOURCE);
}

/* The test suite's broken-allocator shim (shims/corrupt.c) defines this; elsewhere it is a
 * null weak reference and costs one predictable branch.  It tells the shim that the next
 * malloc/realloc of this thread is a measured block, so that the shim damages only blocks the
 * self-check covers and never the workload's bookkeeping (which would crash, not FAIL). */
extern void bench_shim_mark(void) __attribute__((weak));
static inline void bench_mark(void) {
  if (bench_shim_mark) bench_shim_mark();
}
static inline void *bench_malloc(size_t n) {
  bench_mark();
  return malloc(n);
}

/* malloc + fill; a NULL is a failure of the run, not something to skip. */
static inline void *bench_alloc(size_t n, uint64_t key, const char *w) {
  void *p = bench_malloc(n);
  if (!p) bench_oom(w, n);
  bench_fill(p, n, key);
  return p;
}

static inline void bench_release(void *p, size_t n, uint64_t key, const char *w) {
  bench_verify(p, n, key, w);
  free(p);
}

/* The false-sharing workloads' inner loop: allocate `iters` objects of n bytes one after the
 * other, write every byte of each `reps` times (two XOR flips, so the pattern survives for the
 * self-check), and free each after its successor is allocated.  Writes go through a volatile
 * pointer so the compiler cannot fold them: the cache-line traffic is the measurement. */
static inline void bench_write_objects(const char *w, size_t n, long long iters, long long reps,
                                       uint64_t key) {
  void *prev = NULL;
  for (long long i = 0; i < iters; i++, key++) {
    volatile unsigned char *p = bench_alloc(n, key, w);
    for (long long r = 0; r < reps; r++)
      for (size_t k = 0; k < n; k++) { p[k] ^= 0x5a; p[k] ^= 0x5a; }
    if (prev) bench_release(prev, n, key - 1, w);
    prev = (void *)p;
  }
  if (prev) bench_release(prev, n, key - 1, w);
}

/* ------------------------------------------------------------------ threads */

typedef void *(*bench_thread_fn)(void *);

static inline void bench_die(const char *w, const char *what, int err) {
  fprintf(stdout, "FAIL workload=%s reason=resource %s: %s\n", w, what, strerror(err));
  fflush(stdout);
  fprintf(stderr, "%s: FAIL: %s: %s\n", w, what, strerror(err));
  _exit(BENCH_EXIT_RESOURCE);
}

/* Starts n threads running fn(args + i*stride) and joins them. */
static inline void bench_run_threads(const char *w, int n, bench_thread_fn fn, void *args,
                              size_t stride) {
  pthread_t *t = calloc((size_t)n, sizeof *t);
  if (!t) bench_oom(w, (size_t)n * sizeof *t);
  for (int i = 0; i < n; i++) {
    int e = pthread_create(&t[i], NULL, fn, (char *)args + (size_t)i * stride);
    if (e) bench_die(w, "pthread_create", e);
  }
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  free(t);
}

/* Most workloads are "N threads each run fn on their own share": fn gets a struct bench_tid
 * whose id is the thread's index.  Returns the wall time from the first create to the last
 * join (thread start-up is part of what an allocator must make cheap). */
struct bench_tid { int id; };
static inline double bench_timed_workers(const char *w, int n, bench_thread_fn fn) {
  struct bench_tid *a = calloc((size_t)n, sizeof *a);
  if (!a) bench_oom(w, (size_t)n * sizeof *a);
  for (int i = 0; i < n; i++) a[i].id = i;
  double t0 = bench_now();
  bench_run_threads(w, n, fn, a, sizeof *a);
  double dt = bench_now() - t0;
  free(a);
  return dt;
}

/* ------------------------------------------------------------------ result */

/* extra: further " key=value" pairs, already formatted (may be NULL). */
static inline void bench_result(const char *workload, long long threads, const char *metric,
                         double value, const char *unit, const char *better, const char *extra) {
  printf("RESULT workload=%s threads=%lld metric=%s value=%.6g unit=%s better=%s%s%s\n",
         workload, threads, metric, value, unit, better, extra && *extra ? " " : "",
         extra ? extra : "");
  fflush(stdout);
}

/* The result line of a timed workload: seconds, lower is better, and its rate. */
static inline void bench_time_result(const char *workload, long long threads, double dt,
                                     double ops) {
  char extra[64];
  snprintf(extra, sizeof extra, "ops_per_s=%.6g", dt > 0 ? ops / dt : 0.0);
  bench_result(workload, threads, "time", dt, "s", "lower", extra);
}

static inline long bench_ncpus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? n : 1;
}

#endif
