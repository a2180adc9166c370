/* A library whose constructor allocates; test_ctor links it after libmtheap so the dynamic
 * linker runs this constructor before libmtheap's own (libraries later on the link line with
 * no dependency between them are initialised first). */
#include "testutil.h"

void *ctor_early_block;
size_t ctor_early_size;
int ctor_early_ran;

__attribute__((constructor)) static void ctor_early(void) {
  void *p = malloc(123);
  if (!p) TFAIL("malloc in an early library constructor failed");
  p = realloc(p, 3 << 20);
  if (!p) TFAIL("realloc in an early library constructor failed");
  free(calloc(3, 333));
  ctor_early_size = 3 << 20;
  ctor_early_block = p;
  th_fill(p, ctor_early_size);
  ctor_early_ran = 1;
}
