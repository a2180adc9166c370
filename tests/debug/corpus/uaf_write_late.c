/* Expected: use-after-free (a write to a freed 40-byte block) after 100000 other allocations,
 * allocated in make_node, freed in drop_node: the block is still in the quarantine (the other
 * blocks are small and freed at once), and the sweep or the exit check finds the write. */
#include <stdlib.h>
#include <string.h>

static char *make_node(void) { return malloc(40); }
static void drop_node(char *n) { free(n); }

static void churn(int n) {
  for (int i = 0; i < n; i++) {
    char *p = malloc(16 + (size_t)(i % 64));
    p[0] = (char)i;
    free(p);
  }
}

int main(void) {
  char *n = make_node();
  memset(n, 'n', 40);
  drop_node(n);
  churn(100000);
  n[8] = 'X'; /* BUG: written long after the free */
  churn(1000);
  return 0;
}
