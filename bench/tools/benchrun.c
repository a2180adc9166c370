/* benchrun: runs a command and writes its exit status and rusage to a file.
 *
 *   benchrun RUSAGE_FILE -- command [args...]
 *
 * Why not os.wait4 in the Python driver directly: a child forked from the driver inherits the
 * driver's peak RSS (Linux carries the pre-exec memory's high-water mark into ru_maxrss), so
 * every run would report at least the ~17 MiB of the Python interpreter.  This helper is small;
 * the command it forks starts with a fresh signal struct and a copy of the helper's small
 * memory, so ru_maxrss is the command's own peak.  The helper ignores SIGTERM/SIGINT so that a
 * polite stop of the process group still lets it report; SIGKILL ends both. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 4 || strcmp(argv[2], "--") != 0) {
    fprintf(stderr, "usage: benchrun RUSAGE_FILE -- command [args...]\n");
    return 2;
  }
  signal(SIGTERM, SIG_IGN);
  signal(SIGINT, SIG_IGN);
  pid_t pid = fork();
  if (pid < 0) {
    perror("benchrun: fork");
    return 127;
  }
  if (pid == 0) {
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    execvp(argv[3], argv + 3);
    fprintf(stderr, "benchrun: cannot run %s: %s\n", argv[3], strerror(errno));
    _exit(127);
  }
  int status;
  struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0)
    if (errno != EINTR) {
      perror("benchrun: wait4");
      return 127;
    }
  FILE *f = fopen(argv[1], "w");
  if (f) {
    fprintf(f, "exit=%d signal=%d utime=%.6f stime=%.6f maxrss_kb=%ld minflt=%ld majflt=%ld\n",
            WIFEXITED(status) ? WEXITSTATUS(status) : -1,
            WIFSIGNALED(status) ? WTERMSIG(status) : 0,
            (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6,
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6, ru.ru_maxrss,
            ru.ru_minflt, ru.ru_majflt);
    fclose(f);
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}
