/* Expected (sample=1): heap-buffer-overflow caught at the faulting write inside libc's sprintf,
 * with a stack that goes on through libc (no frame pointers there) to format_id, the caller. */
#include <stdio.h>
#include <stdlib.h>

static char *format_id(int id, const char *name) {
  char *b = malloc(12);
  sprintf(b, "user-%d-%s", id, name); /* BUG: 12 bytes are not enough */
  return b;
}

int main(void) {
  char *s = format_id(42, "account-name");
  puts(s);
  free(s);
  return 0;
}
