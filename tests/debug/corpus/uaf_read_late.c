/* Expected (guardpage): use-after-free, a READ of a 24-byte block freed 100000 allocations
 * earlier (each freed again at once), caught at the faulting load in print_initial; allocated in
 * make_name, freed in drop_name.  Slots are reused oldest-freed first, so the freed block's slot
 * must outlast 100000 other frees for the report to name it and not a later block. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *make_name(void) {
  char *p = malloc(24);
  strcpy(p, "session-name");
  return p;
}

static void drop_name(char *p) { free(p); }

static void churn(void) {
  for (int i = 0; i < 100000; i++) {
    void *q = malloc(16 + i % 100);
    free(q);
  }
}

static void print_initial(const char *n) { printf("%c\n", n[3]); /* BUG: n was freed */ }

int main(void) {
  char *n = make_name();
  drop_name(n);
  churn();
  print_initial(n);
  return 0;
}
