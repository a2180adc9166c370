/* Expected (guardpage): heap-buffer-overflow, a READ one element past a 32-byte block, caught at
 * the faulting load in sum_values (allocated in make_values). */
#include <stdio.h>
#include <stdlib.h>

static int *make_values(int n) {
  int *v = malloc(sizeof *v * (size_t)n);
  for (int i = 0; i < n; i++) v[i] = i;
  return v;
}

static long sum_values(const int *v, int n) {
  long s = 0;
  for (int i = 0; i <= n; i++) s += v[i]; /* BUG: <= reads past the end */
  return s;
}

int main(void) {
  int *v = make_values(8);
  printf("%ld\n", sum_values(v, 8));
  free(v);
  return 0;
}
