/* Expected: heap-buffer-underflow, allocated in make_prefix_buffer. */
#include <stdlib.h>

static char *make_prefix_buffer(void) { return malloc(32); }

static void parse_prefix(char *b, int n) {
  for (int i = n - 1; i >= -1; i--) b[i] = 'p'; /* BUG: writes b[-1] */
}

int main(void) {
  char *b = make_prefix_buffer();
  parse_prefix(b, 32);
  free(b);
  return 0;
}
