/* Expected: all ten directly leaked blocks reported (1045 bytes), exit 23 with
 * leaks_exitcode=23.  The lowest-addressed one used to be missed: the leak checker's own
 * statics (the lowest live block's address) were scanned as a root and marked it. */
#include <stdlib.h>
#include <string.h>

static __attribute__((noinline)) void leak_ten_records(void) {
  for (int i = 0; i < 10; i++) {
    char *volatile b = malloc(100 + i);
    memset(b, 'x', 100 + i);
    b = NULL;
  }
}

static __attribute__((noinline)) void scrub_stack(void) {
  volatile char junk[8192];
  memset((char *)junk, 0, sizeof junk);
}

int main(void) {
  leak_ten_records();
  scrub_stack();
  return 0;
}
