/* Expected: memory-leak report naming leak_session_buffers (3 blocks, 3 * 128 bytes); exit 23
 * when run with leaks_exitcode=23.  A reachable block (kept_config) is not reported. */
#include <stdlib.h>
#include <string.h>

static char *kept_config;

static __attribute__((noinline)) void leak_session_buffers(void) {
  for (int i = 0; i < 3; i++) {
    char *volatile b = malloc(128);
    memset(b, 'x', 128);
    b = NULL;
  }
}

static __attribute__((noinline)) void scrub_stack(void) {
  volatile char junk[4096];
  memset((char *)junk, 0, sizeof junk);
}

int main(void) {
  kept_config = malloc(64);
  leak_session_buffers();
  scrub_stack();
  return 0;
}
