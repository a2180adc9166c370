/* Expected (MTHEAP_DEBUG=guardpage): double-free, detected in release_frame.  The block is
 * larger than the guard-page slots (64 KiB), so no slot holds it: guardpage checks such blocks
 * with a header, and the report names the allocation and the first free. */
#include <stdlib.h>
#include <string.h>

static char *make_frame(void) {
  char *f = malloc(100000);
  memset(f, 0, 100000);
  return f;
}

static void release_frame(char *f) { free(f); }

int main(void) {
  char *keep = make_frame();  /* the page keeps a block out: the second free finds the first */
  char *f = make_frame();
  release_frame(f);
  release_frame(f); /* BUG */
  free(keep);
  return 0;
}
