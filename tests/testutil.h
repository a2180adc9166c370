/* Shared helpers for the mtheap tests: failure reporting, block patterns, RSS, child processes,
 * and the choice of allocator a test drives.
 *
 * A test source is compiled in one of three ways:
 *   -DTEST_PREFIXED   calls mtheap_malloc & co. (linked with mtheap_api or a sanitizer variant)
 *   -DTEST_LINKED     calls malloc & co., linked with libmtheap.so (the override)
 *   (nothing)         calls malloc & co., not linked: run under LD_PRELOAD=libmtheap.so.  The
 *                     mtheap_* extras are weak references, resolved from the preloaded library;
 *                     th_require_mtheap_extras() fails the test when they did not resolve, i.e.
 *                     when mtheap is not actually in the process.
 */
#ifndef MTHEAP_TESTUTIL_H
#define MTHEAP_TESTUTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mtheap.h"

#ifdef TEST_PREFIXED
#define T_MALLOC mtheap_malloc
#define T_CALLOC mtheap_calloc
#define T_REALLOC mtheap_realloc
#define T_REALLOCARRAY mtheap_reallocarray
#define T_FREE mtheap_free
#define T_FREE_SIZED mtheap_free_sized
#define T_FREE_ALIGNED_SIZED mtheap_free_aligned_sized
#define T_POSIX_MEMALIGN mtheap_posix_memalign
#define T_ALIGNED_ALLOC mtheap_aligned_alloc
#define T_MEMALIGN mtheap_memalign
#define T_VALLOC mtheap_valloc
#define T_PVALLOC mtheap_pvalloc
#define T_USABLE_SIZE mtheap_usable_size
#define T_API_NAME "prefixed"
#else
/* glibc 2.36 does not declare these (C23); libmtheap defines them. */
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t alignment, size_t size);
#ifndef TEST_LINKED
/* Unlinked: resolved at run time from the preloaded library, or left NULL. */
#pragma weak free_sized
#pragma weak free_aligned_sized
#pragma weak mtheap_owns
#pragma weak mtheap_collect
#pragma weak mtheap_stats_get
#pragma weak mtheap_stats_print
#pragma weak mtheap_usable_size
#endif
#define T_MALLOC malloc
#define T_CALLOC calloc
#define T_REALLOC realloc
#define T_REALLOCARRAY reallocarray
#define T_FREE free
#define T_FREE_SIZED free_sized
#define T_FREE_ALIGNED_SIZED free_aligned_sized
#define T_POSIX_MEMALIGN posix_memalign
#define T_ALIGNED_ALLOC aligned_alloc
#define T_MEMALIGN memalign
#define T_VALLOC valloc
#define T_PVALLOC pvalloc
#define T_USABLE_SIZE malloc_usable_size
#define T_API_NAME "override"
#endif

/* ---------------------------------------------------------------- failure reporting */

/* Failures abort rather than exit so a core/backtrace points at the check, and so a failure in
 * any thread stops the whole test at once. */
__attribute__((noreturn, format(printf, 3, 4))) static inline void
th_fail_at(const char *file, int line, const char *fmt, ...) {
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "FAIL %s:%d: ", file, line);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
  va_end(ap);
  /* What the test printed so far explains the failure; abort() would drop it. */
  fflush(stdout);
  /* write(2) for the message itself: stdio may allocate, and the heap is under suspicion. */
  size_t len = strlen(buf);
  buf[len < sizeof buf - 1 ? len++ : len - 1] = '\n';
  ssize_t w = write(STDERR_FILENO, buf, len);
  (void)w;
  abort();
}
#define TFAIL(...) th_fail_at(__FILE__, __LINE__, __VA_ARGS__)
/* TCHECK(x == 1); TCHECKF(x == 1, "x=%d", x); */
#define TCHECK(cond)                                       \
  do {                                                     \
    if (!(cond)) TFAIL("check `%s` failed", #cond);        \
  } while (0)
#define TCHECKF(cond, fmt, ...)                                               \
  do {                                                                        \
    if (!(cond)) TFAIL("check `%s` failed: " fmt, #cond, __VA_ARGS__);        \
  } while (0)

static inline void th_require_mtheap_extras(void) {
#if !defined(TEST_PREFIXED) && !defined(TEST_LINKED)
  if (!&mtheap_owns || !&mtheap_stats_get || !&mtheap_collect || !&mtheap_stats_print ||
      !&mtheap_usable_size || !&free_sized || !&free_aligned_sized)
    TFAIL("mtheap_* functions are not in the process: libmtheap is neither linked nor preloaded");
#endif
}

/* ---------------------------------------------------------------- random numbers */

typedef struct { uint64_t s; } th_rng_t;

static inline uint64_t th_mix64(uint64_t x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27; x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
static inline th_rng_t th_rng(uint64_t seed) { th_rng_t r = {th_mix64(seed + 0x9e3779b97f4a7c15ull) | 1}; return r; }
static inline uint64_t th_next(th_rng_t *r) {
  uint64_t x = r->s;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  r->s = x;
  return x * 0x2545f4914f6cdd1dull;
}
static inline uint64_t th_below(th_rng_t *r, uint64_t n) { return n ? th_next(r) % n : 0; }
/* Log-uniform in [lo, hi]: small sizes dominate, as in real programs, but every size class is hit. */
static inline size_t th_logsize(th_rng_t *r, size_t lo, size_t hi) {
  unsigned lb = 63 - (unsigned)__builtin_clzll(lo | 1), hb = 63 - (unsigned)__builtin_clzll(hi | 1);
  unsigned b = lb + (unsigned)th_below(r, hb - lb + 1);
  size_t base = (size_t)1 << b;
  size_t s = base + (size_t)th_below(r, base);
  if (s < lo) s = lo;
  if (s > hi) s = hi;
  return s;
}

/* A size from a mix of 90% small blocks (1..4 KiB), 9.5% large ones (4 KiB..large_hi) and 0.5%
 * huge ones (huge_lo..huge_hi): every allocation path, with the common one most of the time. */
static inline size_t th_mixed_size(th_rng_t *r, size_t large_hi, size_t huge_lo, size_t huge_hi) {
  uint64_t x = th_below(r, 1000);
  return x < 900 ? th_logsize(r, 1, 4096) : x < 995 ? th_logsize(r, 4097, large_hi) : th_logsize(r, huge_lo, huge_hi);
}

/* ---------------------------------------------------------------- block patterns */

/* Every block carries a pattern that depends on a seed (its address and size for ordinary blocks,
 * a per-chain token for realloc chains, whose address changes) and the offset.  A block that
 * overlaps another, is handed out twice, or is corrupted by the allocator's free-list pointers,
 * fails th_verify.  Blocks above TH_FULL_LIMIT are checked on a sample of every 4 KiB page
 * (head, tail and one word per page) so the huge-block tests stay fast but still touch all pages. */
#define TH_FULL_LIMIT ((size_t)64 << 10)

static inline uint64_t th_seed(const void *p, size_t n) { return th_mix64((uintptr_t)p * 31 + n); }

/* One multiply per word keeps filling cheap enough for 10 million blocks; distinct seeds give
 * distinct words at every offset, which is all the overlap and corruption checks need. */
static inline uint64_t th_word(uint64_t seed, size_t i) { return (seed + i) * 0x9e3779b97f4a7c15ull; }

static inline unsigned char th_byte(uint64_t seed, size_t i) {
  return (unsigned char)(th_word(seed, i >> 3) >> ((i & 7) * 8));
}
/* Word at a time where the offset allows it (the pattern is little-endian by construction). */
static inline void th_fill_range(unsigned char *p, size_t from, size_t to, uint64_t seed) {
  size_t i = from;
  for (; i < to && (i & 7); i++) p[i] = th_byte(seed, i);
  for (; i + 8 <= to; i += 8) {
    uint64_t w = th_word(seed, i >> 3);
    __builtin_memcpy(p + i, &w, 8);  /* inlined even under -fno-builtin */
  }
  for (; i < to; i++) p[i] = th_byte(seed, i);
}
static inline size_t th_check_range(const unsigned char *p, size_t from, size_t to, uint64_t seed) {
  size_t i = from;
  for (; i < to && (i & 7); i++)
    if (p[i] != th_byte(seed, i)) return i;
  for (; i + 8 <= to; i += 8) {
    uint64_t w = th_word(seed, i >> 3), got;
    __builtin_memcpy(&got, p + i, 8);
    if (got != w) break;
  }
  for (; i < to; i++)
    if (p[i] != th_byte(seed, i)) return i;
  return (size_t)-1;
}

/* The byte ranges a block of n bytes carries its pattern in. */
#define TH_FOR_EACH_RANGE(n, from, to, ...)                                   \
  do {                                                                         \
    if ((n) <= TH_FULL_LIMIT) { size_t from = 0, to = (n); __VA_ARGS__; break; }      \
    { size_t from = 0, to = 256; __VA_ARGS__; }                                       \
    for (size_t pg_ = 4096; pg_ + 64 <= (n) - 256; pg_ += 4096) {              \
      size_t from = pg_, to = pg_ + 64; __VA_ARGS__;                                  \
    }                                                                          \
    { size_t from = (n) - 256, to = (n); __VA_ARGS__; }                               \
  } while (0)

static inline void th_fill_seed(void *p, size_t n, uint64_t seed) {
  TH_FOR_EACH_RANGE(n, a, b, th_fill_range((unsigned char *)p, a, b, seed));
}

/* Checks the pattern in the first n bytes (n may be a prefix of the filled size when checking
 * what realloc preserved: the ranges of a prefix are a subset only for full fills, so the caller
 * passes the size the block was filled with as filled_n). */
static inline void th_verify_seed_at(const char *file, int line, const void *p, size_t skip,
                                     size_t n, size_t filled_n, uint64_t seed) {
  const unsigned char *c = (const unsigned char *)p;
  size_t bad = (size_t)-1;
  TH_FOR_EACH_RANGE(filled_n, a, b, {
    size_t aa = a > skip ? a : skip, bb = b < n ? b : n;
    if (aa < bb && bad == (size_t)-1) bad = th_check_range(c, aa, bb, seed);
  });
  if (bad != (size_t)-1) {
    unsigned char want = th_byte(seed, bad);
    th_fail_at(file, line,
               "block %p (checked %zu of %zu bytes, seed %016" PRIx64
               ") corrupted at offset %zu: byte 0x%02x, expected 0x%02x",
               p, n, filled_n, seed, bad, c[bad], want);
  }
}
#define th_verify_seed(p, n, filled, seed) th_verify_seed_at(__FILE__, __LINE__, p, 0, n, filled, seed)
/* Skips the first `skip` bytes, which the test itself reused (e.g. as a list link). */
#define th_verify_skip(p, skip, n) th_verify_seed_at(__FILE__, __LINE__, p, skip, n, n, th_seed(p, n))

static inline void th_fill(void *p, size_t n) { th_fill_seed(p, n, th_seed(p, n)); }
#define th_verify(p, n) th_verify_seed_at(__FILE__, __LINE__, p, 0, n, n, th_seed(p, n))

/* ---------------------------------------------------------------- process state */

static inline size_t th_rss(void) {
  int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) TFAIL("open /proc/self/statm: %s", strerror(errno));
  char buf[128];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) TFAIL("read /proc/self/statm");
  buf[n] = 0;
  unsigned long size = 0, res = 0;
  if (sscanf(buf, "%lu %lu", &size, &res) != 2) TFAIL("parse /proc/self/statm: %s", buf);
  return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

static inline uint64_t th_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline void th_sleep_ms(unsigned ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* ThreadSanitizer's shadow memory is part of RSS and grows with the memory the program touches;
 * RSS bounds are scaled by this factor under TSan (the allocator's behaviour is what is bounded,
 * and it is the same allocator code). */
#if defined(__SANITIZE_THREAD__)
#define TH_RSS_FACTOR 8
#else
#define TH_RSS_FACTOR 1
#endif

/* ---------------------------------------------------------------- child processes */

typedef struct {
  int status;          /* from waitpid */
  char err[8192];      /* the child's stderr, NUL-terminated, truncated */
  size_t err_len;
} th_child_t;

/* Runs fn in a forked child with stderr captured, so a test can check that something aborts
 * with the right message without taking the test down.  The alarm turns a hang into a
 * failure (SIGALRM) instead of a ctest timeout. */
static inline void th_run_child(void (*fn)(void *), void *arg, unsigned timeout_s, th_child_t *out) {
  int fds[2];
  if (pipe(fds) != 0) TFAIL("pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) TFAIL("fork: %s", strerror(errno));
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    alarm(timeout_s);
    fn(arg);
    _exit(0);
  }
  close(fds[1]);
  out->err_len = 0;
  for (;;) {
    char tmp[1024];
    ssize_t n = read(fds[0], tmp, sizeof tmp);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size_t room = sizeof out->err - 1 - out->err_len;
    size_t take = (size_t)n < room ? (size_t)n : room;
    memcpy(out->err + out->err_len, tmp, take);
    out->err_len += take;
  }
  out->err[out->err_len] = 0;
  close(fds[0]);
  while (waitpid(pid, &out->status, 0) < 0)
    if (errno != EINTR) TFAIL("waitpid: %s", strerror(errno));
}

static inline const char *th_status_str(int status, char *buf, size_t cap) {
  if (WIFEXITED(status)) snprintf(buf, cap, "exit %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status)) snprintf(buf, cap, "signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  else snprintf(buf, cap, "status 0x%x", status);
  return buf;
}

/* A hang (deadlock in the allocator) becomes a failure with a message rather than a silent
 * ctest timeout.  The limit is far above the expected runtime: it is not a speed check. */
static const char *th_watchdog_name = "test";
static inline void th_watchdog_fire(int sig) {
  char buf[256];
  int n = snprintf(buf, sizeof buf, "FAIL %s: still running after the watchdog limit: deadlock?\n",
                   th_watchdog_name);
  ssize_t w = write(STDERR_FILENO, buf, (size_t)n);
  (void)w;
  abort();
}
static inline void th_watchdog(unsigned seconds, const char *name) {
  th_watchdog_name = name;
  signal(SIGALRM, th_watchdog_fire);
  alarm(seconds);
}

static inline void th_stats(struct mtheap_stats *st) {
  th_require_mtheap_extras();
  memset(st, 0, sizeof *st);
  mtheap_stats_get(st);
}

/* The line of mtheap's statistics report that contains key, into line (the numbers that are not
 * in struct mtheap_stats, whose size is the ABI, are read from the report).  Fails the test if
 * there is none. */
static inline void th_report_line(const char *key, char *line, size_t n) {
  th_require_mtheap_extras();
  FILE *f = tmpfile();
  TCHECK(f != NULL);
  mtheap_stats_print(f);
  rewind(f);
  bool found = false;
  while (!found && fgets(line, (int)n, f)) found = strstr(line, key) != NULL;
  fclose(f);
  TCHECKF(found, "the statistics report has no line with '%s'", key);
}

/* The number right after key on the statistics report's line that has it. */
static inline uint64_t th_report_count(const char *key) {
  char line[512];
  th_report_line(key, line, sizeof line);
  return strtoull(strstr(line, key) + strlen(key), NULL, 10);
}

static inline void th_thread(pthread_t *t, void *(*fn)(void *), void *arg) {
  int e = pthread_create(t, NULL, fn, arg);
  if (e) TFAIL("pthread_create: %s", strerror(e));
}
static inline void th_join(pthread_t t) {
  int e = pthread_join(t, NULL);
  if (e) TFAIL("pthread_join: %s", strerror(e));
}

#endif
