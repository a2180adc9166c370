/* Reader-starved writer (reference 001): four readers keep the read lock continuously held
 * while one writer asks for it.  argv[1]: "default" (glibc prefers readers: the writer waits
 * until the readers stop) or "nonrec" (PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP: readers
 * queue behind the writer). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

pthread_rwlock_t rw;
static atomic_int stop, holders;
static int nonrec;

/* A reader lets go only once another reader holds the lock, so the lock is never free of
 * readers and the outcome does not depend on scheduling.  With the writer-preferring kind no
 * new reader gets in while the writer waits, so there a reader gives up waiting after 5 ms. */
static void *reader(void *arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    pthread_rwlock_rdlock(&rw);
    atomic_fetch_add(&holders, 1);
    usleep(1000);
    for (int i = 0; atomic_load(&holders) < 2 && !atomic_load(&stop) && (!nonrec || i < 50); i++)
      usleep(100);
    atomic_fetch_sub(&holders, 1);
    pthread_rwlock_unlock(&rw);
    usleep(200);
  }
  return NULL;
}

static void *writer(void *arg) {
  (void)arg;
  usleep(50 * 1000);
  pthread_rwlock_wrlock(&rw);
  pthread_rwlock_unlock(&rw);
  return NULL;
}

int main(int argc, char **argv) {
  pthread_rwlockattr_t a;
  pthread_rwlockattr_init(&a);
  nonrec = argc > 1 && !strcmp(argv[1], "nonrec");
  if (nonrec)
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&rw, &a);
  pthread_t r[4], w;
  for (int i = 0; i < 4; i++) {
    pthread_create(&r[i], NULL, reader, NULL);
    usleep(500); /* stagger so that some reader always holds the lock */
  }
  pthread_create(&w, NULL, writer, NULL);
  usleep(600 * 1000);
  atomic_store(&stop, 1);
  for (int i = 0; i < 4; i++) pthread_join(r[i], NULL);
  pthread_join(w, NULL);
  puts("rwlock done");
  return 0;
}
