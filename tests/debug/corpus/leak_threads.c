/* Expected: memory-leak, counted exactly: 400 blocks leaked by four worker threads that have
 * exited (their cached stacks still hold the last pointers), and a tree built by make_tree
 * after main's other work: one 80-byte node leaked directly, its ten 200-byte children only
 * through it.  Stale words (the dead threads' stacks, main's finished frames) are not roots. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void *leak_in_worker(void *arg) {
  (void)arg;
  for (int i = 0; i < 100; i++) {
    char *p = malloc(64 + (size_t)i);
    memset(p, 1, 64);
  }
  return NULL;
}

struct node { struct node *kids[10]; };

static void make_tree(void) {
  struct node *n = malloc(sizeof *n);
  for (int i = 0; i < 10; i++) n->kids[i] = malloc(200);
}

int main(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, leak_in_worker, NULL);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  make_tree();
  return 0;
}
