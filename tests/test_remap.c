/* Huge realloc by mremap when the kernel refuses the whole range (os.c): the block moves slot
 * by slot; if a piece fails, the pieces already moved go back, the destination is mapped again,
 * and realloc copies.  mremap is replaced here (the library's calls bind to this executable's
 * definition, exported with -rdynamic) so the refusals are certain, not a matter of layout.
 * Usage: test_remap pieces|rollback   (linked with libmtheap.so) */
#define _GNU_SOURCE
#include "testutil.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <sys/mman.h>

#include "internal.h"   /* MTH_SEG_SIZE: the arena's slot, the unit of a piecewise move */

static volatile int fail_whole;       /* refuse the next call that moves more than a slot (EFAULT) */
static volatile int fail_piece = -1;  /* after that, refuse the piece with this index (ENOMEM) */
static volatile int pieces;           /* one-slot moves seen since the whole range was refused */
static volatile int calls;  /* volatile: the compiler takes realloc for the builtin that calls nothing of ours */

void *mremap(void *old, size_t old_size, size_t new_size, int flags, ...) {
  static void *(*real)(void *, size_t, size_t, int, ...);
  if (!real) real = (void *(*)(void *, size_t, size_t, int, ...))dlsym(RTLD_NEXT, "mremap");
  va_list ap;
  va_start(ap, flags);
  void *new_addr = (flags & MREMAP_FIXED) ? va_arg(ap, void *) : NULL;
  va_end(ap);
  calls++;
  if (fail_whole && old_size > MTH_SEG_SIZE) {
    fail_whole = 0;
    pieces = 0;
    errno = EFAULT;
    return MAP_FAILED;
  }
  if (old_size == MTH_SEG_SIZE && new_size == old_size && pieces++ == fail_piece) {
    errno = ENOMEM;
    return MAP_FAILED;
  }
  return real(old, old_size, new_size, flags, new_addr);
}

static void grow(int piece_to_fail, bool expect_moved) {
  const size_t mib = (size_t)1 << 20;
  void *hb = malloc(16 * mib);
  TCHECK(hb != NULL);
  th_fill_seed(hb, 16 * mib, 5);
  void *wall = malloc(8 * mib);   /* behind hb: the growth cannot happen in place */
  TCHECK(wall != NULL);
  th_fill_seed(wall, 8 * mib, 6);
  struct mtheap_stats s0, s1;
  th_stats(&s0);
  fail_whole = 1;
  fail_piece = piece_to_fail;
  int c0 = calls;
  void *hb2 = realloc(hb, 64 * mib);
  fail_piece = -1;
  th_stats(&s1);
  TCHECK(hb2 != NULL);
  th_verify_seed(hb2, 16 * mib, 16 * mib, 5);
  memset((char *)hb2 + 16 * mib, 0x5a, 48 * mib);
  bool moved = s1.reallocs_mremap > s0.reallocs_mremap;
  printf("piece %d refused: %d mremap calls, %s\n", piece_to_fail, calls - c0,
         moved ? "moved slot by slot" : "copied");
  TCHECKF(moved == expect_moved, "realloc %s, expected it to be %s", moved ? "moved the pages" : "copied",
          expect_moved ? "moved slot by slot" : "copied after the rollback");
  /* every address the failed move touched must be usable again: fill the arena's free runs */
  void *big[8];
  for (int i = 0; i < 8; i++) {
    big[i] = malloc(24 * mib);
    TCHECK(big[i] != NULL);
    memset(big[i], 0x33, 24 * mib);
  }
  for (int i = 0; i < 8; i++) free(big[i]);
  th_verify_seed(wall, 8 * mib, 8 * mib, 6);
  free(hb2);
  free(wall);
}

int main(int argc, char **argv) {
  const char *c = argc > 1 ? argv[1] : "";
  th_watchdog(50, c);
  free(malloc(16));
  if (!strcmp(c, "pieces")) grow(-1, true);          /* every piece moves */
  else if (!strcmp(c, "rollback")) grow(2, false);   /* the third piece fails */
  else TFAIL("usage: %s pieces|rollback", argv[0]);
  return 0;
}
