/* The cached CFI walk (src/debug/unwind.c) against libgcc's _Unwind_Backtrace: the same return
 * addresses for every frame shape compiled code has (rsp-based frames of -O2 code, rbp-based
 * frames of VLAs and alloca, frames inside libc reached through callbacks, a thread's stack,
 * a signal handler's), on first use and from the cache; and after dlclose + dlopen of a plugin
 * whose frame differs at the same return address, the walk is right again only once the cache
 * is dropped (the hook libmtheap-debug's dlclose calls).
 *
 *   test_unwind CASE PLUGIN_A PLUGIN_B    CASE: shapes | threads | signal | dlclose
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>

#include "mthd.h"

__thread mthd_tls_t mthd_tls;  /* unwind.c counts its re-entries here */

#define DEPTH 64
static int compared, fell_back, failures;
static int quiet;  /* a mismatch is expected: do not print it */

struct uw {
  uintptr_t *pcs;
  int n;
};

static _Unwind_Reason_Code cb(struct _Unwind_Context *ctx, void *arg) {
  struct uw *u = arg;
  uintptr_t pc = (uintptr_t)_Unwind_GetIP(ctx);
  if (pc == 0) return _URC_END_OF_STACK;
  u->pcs[u->n++] = pc;
  return u->n >= DEPTH ? _URC_END_OF_STACK : _URC_NO_REASON;
}

/* this thread's stack end, as libmtheap-debug passes it: the walk's bound must not cut a
 * right stack short */
static __thread uintptr_t stack_hi;

static uintptr_t this_stack_hi(void) {
  if (!stack_hi) {
    pthread_attr_t a;
    void *lo;
    size_t sz;
    if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &sz)) {
      fprintf(stderr, "FAIL pthread_getattr_np\n");
      exit(1);
    }
    pthread_attr_destroy(&a);
    stack_hi = (uintptr_t)lo + sz;
  }
  return stack_hi;
}

/* Both walks from here.  Their first entries are two return addresses inside this function
 * (after each call); every one after must be equal.  Returns 1 if they agree, 0 if not, -1 if
 * the cached walk declined (allowed only where allow_fallback). */
__attribute__((noinline)) static int compare(const char *what, int allow_fallback) {
  uintptr_t a[DEPTH], b[DEPTH];
  int na = mthd_unwind_cached(a, DEPTH, this_stack_hi());
  struct uw u = {b, 0};
  _Unwind_Backtrace(cb, &u);
  if (na < 0) {
    fell_back++;
    if (!allow_fallback) {
      fprintf(stderr, "FAIL %s: the cached walk declined a plain frame\n", what);
      failures++;
    }
    return -1;
  }
  compared++;
  int ok = na == u.n && na > 1 && !memcmp(a + 1, b + 1, (size_t)(na - 1) * sizeof a[0]);
  if (!ok && !quiet) {
    fprintf(stderr, "FAIL %s: cached %d frames, libgcc %d\n", what, na, u.n);
    for (int i = 0; i < na || i < u.n; i++)
      fprintf(stderr, "  #%d %#lx %#lx\n", i, i < na ? (unsigned long)a[i] : 0ul, i < u.n ? (unsigned long)b[i] : 0ul);
  }
  if (!ok) failures++;
  return ok;
}

/* ---- frame shapes ---- */

static volatile int sink;

__attribute__((noinline)) static void leaf_rsp(int n) {
  compare("rsp frame", 0);
  sink += n;
}

/* a variable-length array: gcc addresses the frame from rbp (CFA = rbp + 16) */
__attribute__((noinline)) static void vla_frame(int n) {
  volatile char v[n + 16];
  v[0] = (char)n;
  leaf_rsp(n);
  sink += v[0];
}

__attribute__((noinline)) static void alloca_frame(int n) {
  volatile char *v = __builtin_alloca((size_t)n * 32 + 8);
  v[0] = 1;
  vla_frame(n);
  compare("alloca frame", 0);
  sink += v[0];
}

/* a large frame (a sub of thousands of bytes) */
__attribute__((noinline)) static void big_frame(int n) {
  volatile char big[20000];
  big[n] = 1;
  alloca_frame(n);
  sink += big[n];
}

/* stack realignment (a DRAP register holds the CFA): the cached walk may decline, never lie */
__attribute__((noinline)) static void realigned(int n) {
  volatile char x[64] __attribute__((aligned(64)));
  x[0] = 1;
  compare("realigned frame", 1);
  big_frame(n);
  sink += x[0];
}

__attribute__((noinline)) static void recurse(int depth, int n) {
  if (depth == 0) {
    realigned(n);
    return;
  }
  if (depth % 3 == 0) {
    volatile char v[depth + 1];
    v[0] = 0;
    recurse(depth - 1, n);
    sink += v[0];
  } else {
    recurse(depth - 1, n);
    sink++;
  }
}

/* A frame whose last push is rbp, right above the return address of its call (compilers emit
 * this for functions that keep rbp as a callee-saved register): rbp's slot is the frame's
 * stack pointer itself. */
void rbp_last(void (*cb)(void));
__asm__(".text\n"
        ".globl rbp_last\n"
        ".type rbp_last, @function\n"
        "rbp_last:\n"
        "  .cfi_startproc\n"
        "  push %rbp\n"
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset %rbp, -16\n"
        "  mov $-8, %rbp\n"       /* a frameless caller's rbp holds anything */
        "  call *%rdi\n"
        "  pop %rbp\n"
        "  .cfi_def_cfa_offset 8\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size rbp_last, .-rbp_last\n");

static void from_rbp_last(void) { compare("rbp saved last, at the frame's stack pointer", 0); }

static int by_value(const void *x, const void *y) {
  compare("callback from libc's qsort", 0);
  return *(const int *)x - *(const int *)y;
}

static void shapes(void) {
  for (int round = 0; round < 3; round++) {  /* first walk computes rules, later ones hit */
    for (int d = 0; d < 40; d += 7) recurse(d, d % 5 + 1);
    rbp_last(from_rbp_last);
    int v[8] = {5, 3, 7, 1, 0, 6, 2, 4};
    qsort(v, 8, sizeof v[0], by_value);
  }
}

static void *thread_main(void *arg) {
  (void)arg;
  shapes();
  return NULL;
}

static void threads(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, thread_main, NULL);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
}

static void on_signal(int sig) {
  (void)sig;
  compare("signal handler", 1);
}

static void signals(void) {
  signal(SIGUSR1, on_signal);
  for (int i = 0; i < 3; i++) raise(SIGUSR1);
  /* and ordinary frames still walk after a declined one */
  compare("after the signal", 0);
}

/* ---- dlclose ---- */

static int stale_result;

static void from_plugin(void) { stale_result = compare("through the plugin", 0); }

static void *load(const char *path, void (**call)(void (*)(void))) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "FAIL dlopen %s: %s\n", path, dlerror());
    exit(1);
  }
  *call = (void (*)(void (*)(void)))dlsym(h, "plugin_call");
  if (!*call) {
    fprintf(stderr, "FAIL no plugin_call in %s\n", path);
    exit(1);
  }
  return h;
}

static void dlclose_case(const char *pa, const char *pb) {
  void (*call_a)(void (*)(void)), (*call_b)(void (*)(void));
  void *ha = load(pa, &call_a);
  for (int i = 0; i < 3; i++) call_a(from_plugin);  /* A's rules are cached */
  uintptr_t where_a = (uintptr_t)call_a;
  dlclose(ha);
  void *hb = load(pb, &call_b);
  if ((uintptr_t)call_b != where_a) {
    fprintf(stderr, "FAIL the second plugin was not loaded where the first was (%#lx vs %#lx): "
            "the stale-rule case cannot be built here\n", (unsigned long)call_b, (unsigned long)where_a);
    failures++;
    return;
  }
  /* with A's rules still cached, B's frame is walked with A's frame size: wrong */
  int saved = failures;
  quiet = 1;
  call_b(from_plugin);
  quiet = 0;
  if (stale_result != 0) {
    fprintf(stderr, "FAIL the stale rule walked the new plugin's frame right: the case tests nothing\n");
    failures = saved + 1;
    return;
  }
  failures = saved;  /* that mismatch was the point */
  compared--;
  mthd_unwind_forget();
  call_b(from_plugin);
  if (stale_result != 1) fprintf(stderr, "FAIL after mthd_unwind_forget the walk is still wrong\n");
  dlclose(hb);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_unwind shapes|threads|signal|dlclose [PLUGIN_A PLUGIN_B]\n");
    return 2;
  }
  if (!strcmp(argv[1], "shapes")) shapes();
  else if (!strcmp(argv[1], "threads")) threads();
  else if (!strcmp(argv[1], "signal")) signals();
  else if (!strcmp(argv[1], "dlclose") && argc == 4) dlclose_case(argv[2], argv[3]);
  else {
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
  }
  printf("%s: %d stacks compared, %d declined, %d failures\n", argv[1], compared, fell_back, failures);
  if (compared == 0) {
    fprintf(stderr, "FAIL nothing was compared\n");
    return 1;
  }
  return failures ? 1 : 0;
}
