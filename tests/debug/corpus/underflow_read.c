/* Expected (guardpage,sample_side=before): heap-buffer-underflow, a READ one byte before a 4-byte
 * block, caught at the faulting load in trim_right (allocated in make_field).  The classic
 * "trim trailing blanks" loop walks back past the start of a string that is all blanks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *make_field(const char *text) {
  char *f = malloc(strlen(text) + 1);
  strcpy(f, text);
  return f;
}

static void trim_right(char *s) {
  char *end = s + strlen(s) - 1;
  while (*end == ' ') end--; /* BUG: no end >= s check; reads s[-1] when s is all blanks */
  end[1] = 0;
}

int main(void) {
  char *f = make_field("   ");
  trim_right(f);
  printf("[%s]\n", f);
  free(f);
  return 0;
}
