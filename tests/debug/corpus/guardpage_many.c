/* Expected (MTHEAP_DEBUG=guardpage): heap-buffer-overflow at the faulting write in
 * corrupt_record, into the 4001st of 5000 live blocks: more than sample=1's 256 slots hold, so
 * only the guard-page mode's slots put that block against a guard page. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char **fill_records(int n) {
  char **t = malloc(sizeof *t * (size_t)n);
  for (int i = 0; i < n; i++) {
    t[i] = malloc(32);
    memset(t[i], 'a', 32);
  }
  return t;
}

static void corrupt_record(char *r) { r[32] = 0; } /* BUG: one past the end */

int main(void) {
  char **t = fill_records(5000);
  corrupt_record(t[4000]);
  puts("done");
  for (int i = 0; i < 5000; i++) free(t[i]);
  free(t);
  return 0;
}
