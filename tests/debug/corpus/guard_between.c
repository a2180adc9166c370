/* A fault in the guard page between two sampled blocks belongs to the nearer one
 * (MTHEAP_DEBUG=guardpage,sample_side=random).  Of 256 blocks of 100 bytes in consecutive
 * slots, find one placed against the guard after it followed by one placed against the same
 * guard from the other side, print both addresses, then ("over") write 13 bytes past the first,
 * at the guard's first byte: heap-buffer-overflow of the first; or ("under") write 1 byte
 * before the second, at the guard's last byte: heap-buffer-underflow of the second.  Allocated
 * in make_items; the writes are in poke_past / poke_before. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { N = 256, SIZE = 100 };

static char *items[N];

static void make_items(void) {
  for (int i = 0; i < N; i++) items[i] = malloc(SIZE);
}

static void poke_past(char *b) { b[SIZE + 12] = 'x'; }    /* BUG: 13 bytes past the end */
static void poke_before(char *b) { b[-1] = 'x'; }         /* BUG: 1 byte before the start */

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "over") && strcmp(argv[1], "under"))) {
    fprintf(stderr, "usage: guard_between over|under\n");
    return 2;
  }
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  make_items();
  for (int i = 0; i + 1 < N; i++) {
    uintptr_t a = (uintptr_t)items[i], b = (uintptr_t)items[i + 1];
    uintptr_t a_end = (a + SIZE + page - 1) & ~(page - 1);
    bool a_after = a % page != 0, b_before = b % page == 0;
    if (!a_after || !b_before || b != a_end + page) continue;
    fprintf(stderr, "pair: %p %p\n", (void *)a, (void *)b);
    if (!strcmp(argv[1], "over")) poke_past(items[i]);
    else poke_before(items[i + 1]);
    fprintf(stderr, "no fault\n");
    return 1;
  }
  fprintf(stderr, "no such pair among %d blocks: not sampled, or not placed on random sides\n", N);
  return 3;
}
