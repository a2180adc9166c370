/* Expected: heap-buffer-overflow (1 byte past a 40-byte block), allocated in make_record. */
#include <stdlib.h>

static char *make_record(void) { return malloc(40); }

static void fill_record(char *r) {
  for (int i = 0; i <= 40; i++) r[i] = 'r'; /* BUG: <= */
}

int main(void) {
  char *r = make_record();
  fill_record(r);
  free(r);
  return 0;
}
