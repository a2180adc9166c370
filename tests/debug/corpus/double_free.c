/* Expected: double-free, allocated in make_buffer, first freed in release_buffer. */
#include <stdlib.h>

static char *make_buffer(void) { return malloc(100); }
static void release_buffer(char *b) { free(b); }

int main(void) {
  char *b = make_buffer();
  release_buffer(b);
  release_buffer(b); /* BUG */
  return 0;
}
