/* A small program for env_options.py: allocates a little (and from a second thread), prints
 * "env_helper ok" on stdout and exits 0.  With the argument "invalid" it first frees a stack
 * address (for MTHEAP_ABORT_ON_INVALID).  Linked with libmtheap.so. */
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
