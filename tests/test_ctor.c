/* malloc & co. called before main, from constructors (linked with libmtheap.so).
 *
 * Proves: the allocator initialises itself on first use, whatever runs first.  The earliest
 * constructor of the executable, and the constructor of a library that the dynamic linker
 * initialises before libmtheap (libtest_ctor_early.so, see CMakeLists.txt), allocate, reallocate
 * and free; the blocks they keep are mtheap's (mtheap_owns) and intact in main.
 */
#include "testutil.h"

/* From libtest_ctor_early.so. */
extern void *ctor_early_block;
extern size_t ctor_early_size;
extern int ctor_early_ran;

static void *exe_block;
static size_t exe_size;
static int exe_ran;

__attribute__((constructor(101))) static void exe_ctor(void) {
  void *a = malloc(10);
  void *b = calloc(100, 10);
  if (!a || !b) TFAIL("malloc in constructor failed");
  for (int i = 0; i < 1000; i++)
    if (((unsigned char *)b)[i]) TFAIL("calloc in constructor: byte %d not zero", i);
  a = realloc(a, 100000);
  if (!a) TFAIL("realloc in constructor failed");
  void *c = NULL;
  if (posix_memalign(&c, 4096, 5000) != 0 || ((uintptr_t)c & 4095)) TFAIL("posix_memalign in constructor");
  free(b);
  free(c);
  free(realloc(malloc(1), 8 << 20));
  exe_size = 100000;
  exe_block = a;
  th_fill(exe_block, exe_size);
  exe_ran = 1;
}

int main(void) {
  TCHECK(exe_ran && ctor_early_ran);
  TCHECK(mtheap_owns(exe_block));
  TCHECKF(mtheap_owns(ctor_early_block), "the early library's block %p is not mtheap's: its "
          "malloc went elsewhere", ctor_early_block);
  th_verify(exe_block, exe_size);
  th_verify(ctor_early_block, ctor_early_size);
  free(exe_block);
  free(ctor_early_block);
  printf("test_ctor: passed\n");
  return 0;
}
