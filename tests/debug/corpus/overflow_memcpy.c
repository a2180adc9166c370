/* Expected: heap-buffer-overflow (4 bytes past a 16-byte block) found at free, allocated in
 * make_header: a memcpy of a 20-byte record into a 16-byte buffer. */
#include <stdlib.h>
#include <string.h>

struct record { char tag[4]; char body[16]; };

static char *make_header(void) { return malloc(16); }

int main(void) {
  struct record r;
  memset(&r, 'h', sizeof r);
  char *h = make_header();
  memcpy(h, &r, sizeof r); /* BUG: sizeof the record, not of the buffer */
  free(h);
  return 0;
}
