/* Known microstates for --threads: main spins on the cpu for 300 ms before its first lock,
 * then starts `sleeper` (sleeps 200 ms, takes sum_lock once) and `holder`, and blocks behind
 * holder, which keeps sum_lock for 300 ms.  Every row must add up to 100, and main's window must
 * start at its start, so its RUN includes the spin. */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t sum_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t go;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}
static void spin(double secs) {
  volatile unsigned long x = 0;
  for (double end = now() + secs; now() < end;) x++;
}
static void *holder(void *arg) {
  (void)arg;
  pthread_mutex_lock(&sum_lock);
  pthread_barrier_wait(&go);
  usleep(300 * 1000);
  pthread_mutex_unlock(&sum_lock);
  return NULL;
}
static void *sleeper(void *arg) {
  (void)arg;
  usleep(200 * 1000);
  pthread_mutex_lock(&sum_lock);
  pthread_mutex_unlock(&sum_lock);
  return NULL;
}

int main(void) {
  spin(0.3);
  pthread_t h, s;
  pthread_barrier_init(&go, NULL, 2);
  pthread_create(&s, NULL, sleeper, NULL);
  pthread_create(&h, NULL, holder, NULL);
  pthread_barrier_wait(&go);
  pthread_mutex_lock(&sum_lock);
  pthread_mutex_unlock(&sum_lock);
  pthread_join(h, NULL);
  pthread_join(s, NULL);
  return 0;
}
