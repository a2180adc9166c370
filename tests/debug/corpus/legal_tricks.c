/* Legal: no report, and "OK".  Programs that are correct but look odd to a heap checker:
 *   - blocks reachable only through a pointer into their middle (a member, a tagged pointer);
 *   - a block whose only pointer is in thread-local storage, or in an anonymous mmap region;
 *   - the zero-size corners: malloc(0), calloc(0, n), realloc(p, 0), free(NULL), realloc(NULL, n);
 *   - every byte malloc_usable_size reports used (glibc allows it);
 *   - a block allocated by one thread and freed by another;
 *   - a child process that frees what its parent allocated, then exits through exit(). */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

struct node { long id; char name[24]; };

static char *interior;          /* points at the name inside a struct node */
static uintptr_t tagged;        /* a pointer with its low bit used as a flag */
static __thread void *tls_only; /* main thread's TLS */
static void **mapped;           /* an anonymous mapping that holds a pointer */

static void *handoff(void *p) {
  free(p);  /* allocated by main */
  return NULL;
}

int main(void) {
  struct node *n = malloc(sizeof *n);
  n->id = 7;
  strcpy(n->name, "interior");
  interior = n->name;
  n = NULL;

  char *t = malloc(48);
  memset(t, 't', 48);
  tagged = (uintptr_t)t | 1;
  t = NULL;

  tls_only = malloc(99);
  memset(tls_only, 1, 99);

  mapped = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return 2;
  mapped[3] = malloc(123);

  void *z = malloc(0);
  free(z);
  z = calloc(0, 16);
  free(z);
  z = malloc(10);
  z = realloc(z, 0);   /* frees, returns NULL (glibc) */
  free(z);
  free(NULL);
  z = realloc(NULL, 33);
  free(z);

  char *u = malloc(21);
  size_t usable = malloc_usable_size(u);
  memset(u, 'u', usable);  /* every usable byte */
  free(u);

  pthread_t th;
  pthread_create(&th, NULL, handoff, malloc(64));
  pthread_join(th, NULL);

  char *shared = strdup("freed by the child");
  pid_t pid = fork();
  if (pid == 0) {
    free(shared);
    exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return 3;
  free(shared);

  printf("OK\n");
  return 0;
}
