/* hotpath: the single-thread malloc+free loop whose instruction count issue 2 compares with
 * mimalloc's.  Run under `valgrind --tool=callgrind` at two loop counts; the difference divided
 * by the difference in iterations is the allocator's cost per malloc+free, start-up excluded
 * (bench/hotpath.py does this for every allocator).
 *
 *   hotpath SIZE ITERATIONS MODE
 *     pair   malloc(SIZE) then free it, ITERATIONS times, with one other block of the same
 *            size kept live (so an allocator that releases an empty page is not measured
 *            releasing it on every free)
 *     lone   the same without the live block: the page empties on every free
 *     batch  malloc 100 blocks, free them in allocation order; ITERATIONS/100 rounds */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Opaque to the optimizer, so malloc/free pairs are not elided. */
static void *volatile sink;

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: hotpath SIZE ITERATIONS pair|lone|batch\n");
    return 2;
  }
  char *end;
  size_t size = strtoul(argv[1], &end, 10);
  if (*end || size == 0) {
    fprintf(stderr, "hotpath: bad SIZE '%s'\n", argv[1]);
    return 2;
  }
  long n = strtol(argv[2], &end, 10);
  if (*end || n < 0) {
    fprintf(stderr, "hotpath: bad ITERATIONS '%s'\n", argv[2]);
    return 2;
  }
  const char *mode = argv[3];
  if (!strcmp(mode, "pair") || !strcmp(mode, "lone")) {
    void *keep = !strcmp(mode, "pair") ? malloc(size) : NULL;
    for (long i = 0; i < n; i++) {
      void *p = malloc(size);
      sink = p;
      free(p);
    }
    free(keep);
  } else if (!strcmp(mode, "batch")) {
    void *b[100];
    for (long r = 0; r < n / 100; r++) {
      for (int i = 0; i < 100; i++) b[i] = malloc(size);
      sink = b[99];
      for (int i = 0; i < 100; i++) free(b[i]);
    }
  } else {
    fprintf(stderr, "hotpath: unknown mode '%s' (pair, lone or batch)\n", mode);
    return 2;
  }
  return 0;
}
