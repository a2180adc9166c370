/* A malloc-heavy loop for measuring the debug mode's cost (docs/DEBUG.md): a working set of
 * 4096 slots, each step frees one slot and allocates a block of 8..1024 bytes (a few larger),
 * touching its first and last byte.  Usage: malloc_loop [steps] [threads] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long steps = 2000000;

static void *run(void *arg) {
  enum { SLOTS = 4096 };
  static __thread char *slot[SLOTS];
  uint64_t x = 88172645463325252ull ^ (uintptr_t)arg;
  unsigned long sum = 0;
  for (long i = 0; i < steps; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t k = x % SLOTS;
    size_t n = (x >> 20) % 64 == 0 ? 1024 + (x >> 32) % 16384 : 8 + (x >> 32) % 1017;
    free(slot[k]);
    char *p = malloc(n);
    p[0] = (char)i;
    p[n - 1] = (char)n;
    sum += (unsigned char)p[0];
    slot[k] = p;
  }
  for (int k = 0; k < SLOTS; k++) free(slot[k]);
  return (void *)sum;
}

int main(int argc, char **argv) {
  if (argc > 1) steps = atol(argv[1]);
  int threads = argc > 2 ? atoi(argv[2]) : 1;
  pthread_t t[64];
  for (int i = 0; i < threads && i < 64; i++) pthread_create(&t[i], NULL, run, (void *)(uintptr_t)(i + 1));
  unsigned long sum = 0;
  for (int i = 0; i < threads && i < 64; i++) {
    void *r;
    pthread_join(t[i], &r);
    sum += (unsigned long)r;
  }
  printf("%lu\n", sum);
  return 0;
}
