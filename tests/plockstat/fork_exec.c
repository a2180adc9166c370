/* fork, exec and _exit: each process image reports on its own.
 *   parent:          parent_lock contended; waits for the child
 *   child (forked):  child_lock contended, then execs itself with "exec-child"
 *   exec-child:      exec_lock contended, then leaves with _exit (no exit handlers run) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

pthread_mutex_t parent_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t child_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t exec_lock = PTHREAD_MUTEX_INITIALIZER;

static void *taker(void *m) {
  pthread_mutex_lock(m);
  pthread_mutex_unlock(m);
  return NULL;
}

/* One contended acquisition of m: we hold it while a thread blocks on it.  glibc marks a
 * mutex with a sleeping waiter by __lock == 2: wait for that rather than guess a delay. */
static void contend(pthread_mutex_t *m) {
  pthread_t t;
  pthread_mutex_lock(m);
  pthread_create(&t, NULL, taker, m);
  for (int i = 0; i < 10000 && __atomic_load_n(&m->__data.__lock, __ATOMIC_ACQUIRE) != 2; i++)
    usleep(1000);
  usleep(50 * 1000);
  pthread_mutex_unlock(m);
  pthread_join(t, NULL);
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "exec-child")) {
    contend(&exec_lock);
    fflush(stdout);
    _exit(0);
  }
  contend(&parent_lock);
  pid_t pid = fork();
  if (pid == 0) {
    contend(&child_lock);
    execl("/proc/self/exe", argv[0], "exec-child", (char *)NULL);
    perror("execl");
    _exit(1);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  printf("fork done, child status %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  return 0;
}
