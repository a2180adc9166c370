/* free() of pointers mtheap does not own, under the override (linked, or preloaded when built
 * without TEST_LINKED): each case runs in a child process, which must die of SIGABRT after
 * writing an error message naming mtheap to stderr - never return quietly or crash elsewhere.
 * Cases: a stack address, a static object, a page from a separate mmap, a block from glibc's
 * own malloc (two allocators in one process), a pointer 1 TiB past a live block, realloc of
 * a stack address, and a 40 KB block freed twice in a row while its page is full (the first
 * free puts it in its class's block cache, src/bcache.c, which must catch the second); and
 * pointers into a slice of a live segment that no span has used yet (its descriptor is all
 * zeros, never written: src/segment.c), freed by the segment's own thread and by another
 * one: each must be reported as not an allocated block, not taken for a block (the other
 * thread's free would queue it for the owner) nor for a double free.  A large block freed
 * twice, or a pointer into its third slice freed after it: kept for reuse (src/page.c), it
 * is reported as free already; with the cache of freed large spans full, its span went back
 * and a second free is of no allocated block.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <regex.h>
#include <sys/mman.h>

static char static_buf[256];

static void free_stack(void *arg) {
  char buf[128];
  memset(buf, 1, sizeof buf);
  free(buf + 16 + (uintptr_t)arg);  /* 16-aligned offset: looks like any block */
}
static void free_static(void *arg) { free(static_buf + 16); }
static void free_mmap(void *arg) {
  char *m = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) TFAIL("mmap: %s", strerror(errno));
  free(m + 4096);
}
static void free_glibc(void *arg) {
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  if (!libc) TFAIL("dlopen libc: %s", dlerror());
  void *(*glibc_malloc)(size_t) = (void *(*)(size_t))dlsym(libc, "malloc");
  if (!glibc_malloc || (void *)glibc_malloc == (void *)malloc) TFAIL("%s", "no separate glibc malloc");
  void *p = glibc_malloc(64);
  if (!p) TFAIL("%s", "glibc malloc failed");
  free(p);
}
static void free_far(void *arg) {
  char *p = malloc(64);
  if (!p) TFAIL("%s", "malloc failed");
  free(p + ((size_t)1 << 40));
}
static void realloc_stack(void *arg) {
  char buf[128];
  memset(buf, 1, sizeof buf);
  void *r = realloc(buf + 16, 1000);
  fprintf(stderr, "realloc returned %p\n", r);
}
static void free_cached_twice(void *arg) {
  void *p[16];
  for (int i = 0; i < 16; i++)
    if (!(p[i] = malloc(40000))) TFAIL("%s", "malloc failed");
  free(p[5]);
  free(p[5]);
}
/* A pointer into slice 60 of the segment a fresh thread's first block lives in: no span of
 * that thread has used it (a thread's first spans take the segment's first slices). */
static char *unused_slice_of_new_thread(void) {
  char *p = malloc(64);
  if (!p) TFAIL("%s", "malloc failed");
  return (char *)((uintptr_t)p & ~(((uintptr_t)4 << 20) - 1)) + 60 * ((size_t)64 << 10);
}
static void *thread_unused_slice(void *arg) {
  char **out = arg;
  *out = unused_slice_of_new_thread();
  return NULL;
}
static void free_unused_slice(void *arg) {
  char *q = NULL;
  pthread_t t;
  if (pthread_create(&t, NULL, thread_unused_slice, &q) || pthread_join(t, NULL)) TFAIL("%s", "thread");
  if ((uintptr_t)arg == 0) {   /* this thread's own segment */
    free(unused_slice_of_new_thread());
  } else {                     /* another (exited) thread's */
    free(q);
  }
}
static void free_large_twice(void *arg) {
  char *p = malloc(300 << 10);
  if (!p) TFAIL("%s", "malloc failed");
  free(p);
  free(p + (uintptr_t)arg);
}
/* Nine freed large blocks: the first fills the heap's cache of freed large spans (src/page.c,
 * MTH_LCACHE_MAX of them), so the last goes back to its segment: freed again, it is no
 * allocated block at all. */
static void free_large_twice_full(void *arg) {
  char *p[9];
  for (int i = 0; i < 9; i++)
    if (!(p[i] = malloc(300 << 10))) TFAIL("%s", "malloc failed");
  for (int i = 0; i < 9; i++) free(p[i]);
  free(p[8] + (uintptr_t)arg);
}
/* The control: a valid free in the same harness exits 0 with nothing on stderr. */
static void free_valid(void *arg) { free(malloc(64)); }

int main(void) {
  th_require_mtheap_extras();
  struct { const char *name; void (*fn)(void *); void *arg; bool valid; const char *says; } cases[] = {
      {"stack", free_stack, NULL, false, NULL}, {"static", free_static, NULL, false, NULL},
      {"mmap", free_mmap, NULL, false, NULL}, {"glibc malloc", free_glibc, NULL, false, NULL},
      {"1 TiB past a block", free_far, NULL, false, NULL}, {"realloc(stack)", realloc_stack, NULL, false, NULL},
      {"cached block twice", free_cached_twice, NULL, false, NULL},
      {"never-used slice", free_unused_slice, (void *)0, false, "not an allocated block"},
      {"never-used, remote", free_unused_slice, (void *)1, false, "not an allocated block"},
      {"large block twice", free_large_twice, (void *)0, false, "free already"},
      {"freed large's 3rd slice", free_large_twice, (void *)(64 << 10), false, "free already"},
      {"large, cache full, twice", free_large_twice_full, (void *)0, false, "not an allocated block"},
      {"valid", free_valid, NULL, true, NULL},
  };
  regex_t re;
  TCHECK(regcomp(&re, "mtheap", REG_EXTENDED | REG_NOSUB) == 0);
  int failures = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    static th_child_t ch;
    th_run_child(cases[i].fn, cases[i].arg, 10, &ch);
    char st[64];
    th_status_str(ch.status, st, sizeof st);
    bool ok;
    if (cases[i].valid)
      ok = WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0 && ch.err_len == 0;
    else
      ok = WIFSIGNALED(ch.status) && WTERMSIG(ch.status) == SIGABRT && regexec(&re, ch.err, 0, NULL, 0) == 0 &&
           strstr(ch.err, "FAIL ") == NULL && (!cases[i].says || strstr(ch.err, cases[i].says));
    printf("%-20s %s: %s; stderr: %s%s", cases[i].name, ok ? "ok" : "WRONG", st, ch.err,
           ch.err_len && ch.err[ch.err_len - 1] == '\n' ? "" : "\n");
    if (!ok) failures++;
  }
  regfree(&re);
  if (failures) {
    fprintf(stderr, "%d case(s) did not %s\n", failures,
            "end in SIGABRT with an error message containing \"mtheap\" (or, for the valid free, exit 0 silently)");
    return 1;
  }
  return 0;
}
