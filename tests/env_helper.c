/* A small program for env_options.py: allocates a little (and from a second thread), prints
 * "env_helper ok" on stdout and exits 0.  With the argument "invalid" it first frees a stack
 * address, with "double" it frees blocks twice (for MTHEAP_ABORT_ON_INVALID).  Linked with
 * libmtheap.so. */
#include "testutil.h"

static void *work(void *arg) {
  for (int i = 0; i < 1000; i++) free(malloc((size_t)i * 100 + 1));
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "invalid")) {
    char buf[64];
    free(buf + 16);
    void *r = realloc(buf + 32, 100);  /* reported and ignored: NULL */
    TCHECK(r == NULL);
  }
  if (argc > 1 && !strcmp(argv[1], "double")) {
    /* sizes of the direct table, of classes above 4 KiB, of four-block spans; each freed twice
     * right away (the head of its page's free list), with a neighbour live and without one */
    static const size_t sizes[] = {100, 5000, 20000};
    for (int i = 0; i < 3; i++) {
      char *keep = malloc(sizes[i]);
      char *p = malloc(sizes[i]);
      TCHECK(keep != NULL && p != NULL);
      free(p);
      free(p);                     /* reported; ignored with MTHEAP_ABORT_ON_INVALID=0 */
      char *a = malloc(sizes[i]), *b = malloc(sizes[i]);
      TCHECKF(a != b, "size %zu: the block freed twice came back twice (%p)", sizes[i], (void *)a);
      free(a);
      free(b);
      free(keep);
      free(keep);                  /* its page may have no block out now */
    }
  }
  void *big = malloc(8 << 20);
  TCHECK(big != NULL && mtheap_owns(big));
  memset(big, 1, 8 << 20);
  pthread_t t;
  th_thread(&t, work, NULL);
  th_join(t);
  free(big);
  printf("env_helper ok\n");
  return 0;
}
