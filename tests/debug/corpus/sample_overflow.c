/* Run with MTHEAP_DEBUG=sample=1: the block is placed flush against a guard page, so the
 * overflow faults on the spot.  The key is 32 bytes (a multiple of 16, so even with the default
 * 16-byte alignment the block ends exactly at the guard page) and the buffer is sized without
 * room for the NUL.  Expected: SIGSEGV with the guard-page report naming make_sampled_key as
 * the allocation site.  With sample_align=1 a 23-byte key behaves the same way. */
#include <stdlib.h>
#include <string.h>

static char *make_sampled_key(const char *s) {
  char *d = malloc(strlen(s)); /* BUG: no room for the NUL */
  return d;
}

int main(int argc, char **argv) {
  const char *s = argc > 1 ? argv[1] : "set key:0001 0 0 1024 flags=77\r\n"; /* 32 characters */
  char *d = make_sampled_key(s);
  strcpy(d, s); /* the NUL faults */
  free(d);
  return 0;
}
