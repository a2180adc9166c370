/* Expected: heap-buffer-underflow (not a bad free) for a write 24 bytes before a block: it runs
 * through the 16-byte left redzone into the block's header; allocated in make_record_buffer. */
#include <stdlib.h>

static char *make_record_buffer(void) { return malloc(48); }

static void fill_with_prefix(char *b, int n) {
  for (int i = n - 1; i >= -24; i--) b[i] = 'r'; /* BUG: a 24-byte prefix written before b */
}

int main(void) {
  char *b = make_record_buffer();
  fill_with_prefix(b, 48);
  free(b);
  return 0;
}
