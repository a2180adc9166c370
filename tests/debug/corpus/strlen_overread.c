/* Expected (guardpage): heap-buffer-overflow, strlen reading past a 16-byte key copied without
 * its terminating NUL (the mcb kind of bug); the fault is inside libc and the stack must reach
 * key_length, the caller. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *copy_key(const char *k) {
  char *c = malloc(16);
  memcpy(c, k, 16); /* BUG: no room for, and no copy of, the NUL */
  return c;
}

static size_t key_length(const char *k) { return strlen(k); }

int main(void) {
  char *k = copy_key("0123456789abcdef");
  printf("%zu\n", key_length(k));
  free(k);
  return 0;
}
