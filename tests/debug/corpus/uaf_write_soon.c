/* Expected: use-after-free (a write to a freed 48-byte block) found while the program runs, in
 * fill_table's mallocs, long before exit: nothing else is freed, so the block never leaves the
 * quarantine, and only the sweep each malloc advances can find the write this soon.  The
 * process must stop there: "table filled" is never printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *open_conn(void) { return malloc(48); }
static void close_conn(char *c) { free(c); }

static void **fill_table(int n) {
  void **t = malloc(sizeof *t * (size_t)n);
  for (int i = 0; i < n; i++) t[i] = malloc(24);
  return t;
}

int main(void) {
  char *c = open_conn();
  memset(c, 'c', 48);
  close_conn(c);
  c[20] = 'X'; /* BUG: write after free */
  void **t = fill_table(20000);
  fprintf(stderr, "table filled\n");
  for (int i = 0; i < 20000; i++) free(t[i]);
  free(t);
  return 0;
}
