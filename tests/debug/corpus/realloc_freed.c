/* Expected: use-after-free (realloc() of a block freed before), allocated in make_list. */
#include <stdlib.h>

static int *make_list(void) { return malloc(10 * sizeof(int)); }

int main(void) {
  int *l = make_list();
  free(l);
  l = realloc(l, 20 * sizeof(int)); /* BUG */
  return l != NULL;
}
