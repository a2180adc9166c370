/* Long-running contention until a stop file appears (for -e and -p): every 20 ms a helper
 * thread takes loop_lock for 10 ms while main blocks on it.  argv[1]: stop file, argv[2]:
 * file to write our pid to.  Gives up after 60 s so that a broken test cannot hang. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

pthread_mutex_t loop_lock = PTHREAD_MUTEX_INITIALIZER;

static void *holder(void *arg) {
  (void)arg;
  pthread_mutex_lock(&loop_lock);
  usleep(10 * 1000);
  pthread_mutex_unlock(&loop_lock);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) return 2;
  FILE *f = fopen(argv[2], "w");
  if (!f) return 2;
  fprintf(f, "%d\n", (int)getpid());
  fclose(f);
  for (int i = 0; i < 3000 && access(argv[1], F_OK) != 0; i++) {
    pthread_t t;
    pthread_create(&t, NULL, holder, NULL);
    usleep(2000);
    pthread_mutex_lock(&loop_lock);
    pthread_mutex_unlock(&loop_lock);
    pthread_join(t, NULL);
    usleep(8000);
  }
  return 0;
}
