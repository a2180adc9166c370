/* mcb bug 2 in miniature: malloc(strlen(s)) then strcpy, so the terminating NUL lands one
 * byte past the block.  Expected: heap-buffer-overflow (1 byte past a 23-byte block),
 * allocated in copy_command_value. */
#include <stdlib.h>
#include <string.h>

static char *copy_command_value(const char *s) {
  char *d = malloc(strlen(s)); /* BUG: no room for the NUL */
  strcpy(d, s);
  return d;
}

int main(void) {
  char *v = copy_command_value("set key:0001 0 0 1024\r\n"); /* 23 characters */
  free(v);
  return 0;
}
