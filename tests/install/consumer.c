/* Built against an installed mtheap (pkg-config, or find_package): proves the installed
 * header, libraries and package files work, and that linking -lmtheap replaces malloc. */
#include <mtheap.h>
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  void *p = malloc(100);
  if (!mtheap_owns(p)) {
    fprintf(stderr, "malloc is not mtheap's after linking -lmtheap\n");
    return 1;
  }
  free(p);
  void *q = mtheap_malloc(10);
  mtheap_free(q);
  puts("consumer ok");
  return 0;
}
