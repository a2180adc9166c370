/* Spinlocks and semaphores: g_spin is held by main for 100 ms while a thread spins on it
 * (one Spin block); a thread waits on g_sem until main posts it (one Semaphore wait). */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

pthread_spinlock_t g_spin;
sem_t g_sem;
static atomic_int started;

static void *spinner(void *arg) {
  (void)arg;
  atomic_store(&started, 1);
  pthread_spin_lock(&g_spin);
  pthread_spin_unlock(&g_spin);
  return NULL;
}
static void *sem_waiter(void *arg) {
  (void)arg;
  sem_wait(&g_sem);
  return NULL;
}

int main(void) {
  pthread_spin_init(&g_spin, PTHREAD_PROCESS_PRIVATE);
  sem_init(&g_sem, 0, 0);
  pthread_t a, b;
  pthread_spin_lock(&g_spin);
  pthread_create(&a, NULL, spinner, NULL);
  while (!atomic_load(&started)) usleep(1000);
  usleep(100 * 1000);
  pthread_spin_unlock(&g_spin);
  pthread_join(a, NULL);
  pthread_create(&b, NULL, sem_waiter, NULL);
  usleep(100 * 1000);
  sem_post(&g_sem);
  pthread_join(b, NULL);
  puts("spin/sem done");
  return 0;
}
