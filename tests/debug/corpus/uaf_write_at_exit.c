/* Expected: use-after-free (a write to a freed 40-byte block) reported at exit, allocated in
 * make_entry: the block never leaves the quarantine, so only the exit check can find it. */
#include <stdlib.h>
#include <string.h>

static char *make_entry(void) { return malloc(40); }

int main(void) {
  char *e = make_entry();
  memset(e, 'e', 40);
  free(e);
  e[8] = 'X'; /* BUG: write after free, right before exit */
  return 0;
}
