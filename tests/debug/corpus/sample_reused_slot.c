/* Expected (sample=1,sample_slots=1): use-after-free, a read of a freed 6000-byte block made in
 * read_header after its only slot went to a 100-byte block: the report must name the freed
 * block (allocated in make_message, freed in drop_message), not call it an underflow of the
 * new one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *make_message(void) {
  char *m = malloc(6000);
  memset(m, 'm', 6000);
  return m;
}
static void drop_message(char *m) { free(m); }
static int read_header(const char *m) { return m[0]; } /* BUG: m was freed */

int main(void) {
  char *m = make_message();
  drop_message(m);
  char *small = malloc(100);   /* takes the slot m had */
  memset(small, 's', 100);
  int h = read_header(m);
  printf("%d\n", h);
  free(small);
  return 0;
}
