/* Expected: bad-free of a pointer on the stack, detected in free_local_name. */
#include <stdlib.h>
#include <string.h>

static void free_local_name(void) {
  char name[32];
  strcpy(name, "local");
  free(name); /* BUG: not from malloc */
}

int main(void) {
  free_local_name();
  return 0;
}
