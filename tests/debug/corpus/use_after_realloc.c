/* Expected: use-after-free (a write to a freed 32-byte block) through a pointer kept across a
 * realloc that moved the block: allocated in make_buf, freed by the realloc in grow_buf. */
#include <stdlib.h>
#include <string.h>

static char *make_buf(void) { return malloc(32); }
static char *grow_buf(char *b) { return realloc(b, 8192); }

int main(void) {
  char *b = make_buf();
  memset(b, 'b', 32);
  char *old = b;
  b = grow_buf(b);
  if (b == old) return 3;   /* the block must move for the bug to exist */
  old[4] = 'X'; /* BUG: the old pointer after the realloc */
  free(b);
  return 0;
}
