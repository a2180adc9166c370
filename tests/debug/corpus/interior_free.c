/* Expected: bad-free of a pointer 16 bytes inside a 64-byte block allocated in make_table. */
#include <stdlib.h>

static char *make_table(void) { return malloc(64); }

int main(void) {
  char *t = make_table();
  char *row = t + 16;
  free(row); /* BUG: interior pointer */
  return 0;
}
