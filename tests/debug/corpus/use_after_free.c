/* Expected: use-after-free (a write to a quarantined block), allocated in make_session, freed
 * in close_session; found by mtheap_check_heap(). */
#include <stdlib.h>
#include <string.h>

extern int mtheap_check_heap(void) __attribute__((weak));

struct session { char name[32]; int refs; };

static struct session *make_session(void) {
  struct session *s = malloc(sizeof *s);
  strcpy(s->name, "client-1");
  s->refs = 1;
  return s;
}

static void close_session(struct session *s) { free(s); }

int main(void) {
  struct session *s = make_session();
  close_session(s);
  s->refs++; /* BUG: s was freed */
  if (mtheap_check_heap) mtheap_check_heap();
  return 0;
}
