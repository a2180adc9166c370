/* Expected: heap-buffer-overflow (1 byte past a 1048576-byte block) found at free, allocated in
 * make_table: a large block (the core's huge path) with the off-by-one at its end. */
#include <stdlib.h>

#define N (1 << 20)

static unsigned char *make_table(void) { return malloc(N); }

int main(void) {
  unsigned char *t = make_table();
  for (int i = 0; i <= N; i++) t[i] = (unsigned char)i; /* BUG: <= */
  free(t);
  return 0;
}
