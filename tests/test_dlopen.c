/* libmtheap.so loaded at run time with dlopen (usage: test_dlopen LIBMTHEAP_SO), as a plugin
 * host would: its initial-exec TLS must fit the static TLS reserve, it must initialise itself on
 * first use, and its prefixed API must work from the thread that loaded it and from threads that
 * existed before the load.  The process's malloc stays glibc's (the library is RTLD_LOCAL). */
#include "testutil.h"

#include <dlfcn.h>

static void *(*p_malloc)(size_t);
static void (*p_free)(void *);
static bool (*p_owns)(const void *);
static _Atomic int go;

static void work(void) {
  void *b[200];
  for (int i = 0; i < 200; i++) {
    size_t n = (size_t)1 << (i % 22);
    b[i] = p_malloc(n);
    if (!b[i] || !p_owns(b[i])) TFAIL("dlopen'ed mtheap_malloc(%zu) = %p", n, b[i]);
    th_fill(b[i], n);
  }
  for (int i = 0; i < 200; i++) {
    th_verify(b[i], (size_t)1 << (i % 22));
    p_free(b[i]);
  }
}

static void *early_thread(void *arg) {
  while (!atomic_load(&go)) th_sleep_ms(1);
  work();
  return NULL;
}

int main(int argc, char **argv) {
  th_watchdog(60, "test_dlopen");
  TCHECK(argc == 2);
  pthread_t t[3];
  for (int i = 0; i < 3; i++) th_thread(&t[i], early_thread, NULL);
  void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) TFAIL("dlopen(%s): %s", argv[1], dlerror());
  p_malloc = (void *(*)(size_t))dlsym(h, "mtheap_malloc");
  p_free = (void (*)(void *))dlsym(h, "mtheap_free");
  p_owns = (bool (*)(const void *))dlsym(h, "mtheap_owns");
  TCHECK(p_malloc && p_free && p_owns);
  void *g = malloc(100);  /* still glibc's */
  TCHECKF(!p_owns(g), "malloc() went to the RTLD_LOCAL library: %p", g);
  free(g);
  work();
  atomic_store(&go, 1);
  for (int i = 0; i < 3; i++) th_join(t[i]);
  printf("test_dlopen: passed\n");
  return 0;
}
