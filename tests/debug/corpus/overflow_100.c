/* Expected: heap-buffer-overflow, allocated in make_packet; the write runs 100 bytes past. */
#include <stdlib.h>
#include <string.h>

static char *make_packet(void) { return malloc(64); }

int main(void) {
  char *p = make_packet();
  memset(p, 'A', 64 + 100); /* BUG */
  free(p);
  return 0;
}
