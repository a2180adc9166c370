/* Expected: heap-buffer-overflow (1 byte past a 100-byte block) found at free, allocated in
 * make_aligned: a posix_memalign'ed block of 64-byte alignment. */
#include <stdlib.h>
#include <string.h>

static char *make_aligned(void) {
  void *p = NULL;
  if (posix_memalign(&p, 64, 100) != 0) exit(2);
  return p;
}

int main(void) {
  char *p = make_aligned();
  memset(p, 'a', 101); /* BUG: one byte too many */
  free(p);
  return 0;
}
