/* Expected (MTHEAP_DEBUG=guardpage): double-free of a 100000-byte block, allocated in
 * make_image, first freed in drop_image, freed again by another thread in release_late, with
 * another free of the same size in between.  The blocks are larger than the guard-page slots
 * (64 KiB): before guardpage checked such blocks with headers, only a second free right after
 * the first was found (the core sees the block at the head of its free list), and this one
 * went through silently. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static char *make_image(void) {
  char *p = malloc(100000);
  memset(p, 7, 100000);
  return p;
}

static void drop_image(char *p) { free(p); }

static void *release_late(void *p) {
  free(p); /* BUG: freed already, by main */
  return NULL;
}

int main(void) {
  char *keep = make_image();
  char *a = make_image(), *b = make_image();
  drop_image(a);
  drop_image(b);
  pthread_t t;
  pthread_create(&t, NULL, release_late, a);
  pthread_join(t, NULL);
  free(keep);
  return 0;
}
