/* Expected: heap-buffer-overflow (1 byte past a 23-byte block) of a block the program never
 * frees, found at exit (guardpage: in the slack its 16-byte alignment leaves before the guard
 * page); allocated in make_config. */
#include <stdlib.h>
#include <string.h>

static char *config;

static char *make_config(void) { return malloc(23); }

static void set_name(char *c, const char *name) {
  strcpy(c, name); /* BUG: the name has 23 characters, and strcpy adds the NUL */
}

int main(void) {
  config = make_config();
  set_name(config, "mtheap-debug-exit-check");
  return 0;
}
