/* A library whose constructor takes locks and starts a thread before plockstat's own
 * constructor may have run (DT_NEEDED libraries can be initialized first): early_lock is
 * held by a thread for 100 ms while the constructor blocks on it; early_thread keeps
 * running until main calls early_lib_done(). */
#include <pthread.h>
#include <unistd.h>

pthread_mutex_t early_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int started, done;
static pthread_t early_thread;

static void *early_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&early_lock);
  pthread_mutex_lock(&gate);
  started = 1;
  pthread_cond_signal(&gate_cv);
  pthread_mutex_unlock(&gate);
  usleep(100 * 1000);
  pthread_mutex_unlock(&early_lock);
  pthread_mutex_lock(&gate);
  while (!done) pthread_cond_wait(&gate_cv, &gate);
  pthread_mutex_unlock(&gate);
  return NULL;
}

__attribute__((constructor)) static void early_ctor(void) {
  pthread_create(&early_thread, NULL, early_main, NULL);
  pthread_mutex_lock(&gate);
  while (!started) pthread_cond_wait(&gate_cv, &gate);
  pthread_mutex_unlock(&gate);
  pthread_mutex_lock(&early_lock); /* blocks ~100 ms */
  pthread_mutex_unlock(&early_lock);
}

void early_lib_done(void) {
  pthread_mutex_lock(&gate);
  done = 1;
  pthread_cond_broadcast(&gate_cv);
  pthread_mutex_unlock(&gate);
  pthread_join(early_thread, NULL);
}
