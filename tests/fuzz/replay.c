/* replay.c: mtfz_replay, the fuzzer without libFuzzer: replays every corpus file named on the
 * command line (files or directories), then runs N inputs generated from seeds, each a
 * deterministic function of its seed so that a failure reproduces with --seed.
 *
 *   mtfz_replay [--seeds N] [--seed S] [--len L] [--seconds T] [--no-fork] [--crash-dir D]
 *               [corpus...]
 *
 * A failing input is written to D/mtfz-crash-<seed>.bin (by the abort handler, with write(2))
 * so it can join the corpus as a regression test. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_api.h"

#define MTFZ_MAX_LEN (1u << 16)
static uint8_t g_input[MTFZ_MAX_LEN];
static size_t g_input_len;
static char g_crash_path[4096];
static char g_what[4200];

static void mtfz_on_abort(int sig) {
  /* async-signal-safe: write the input that failed, say where, die as before */
  if (g_crash_path[0]) {
    int fd = open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ssize_t w = write(fd, g_input, g_input_len);
      (void)w;
      close(fd);
    }
  }
  ssize_t w = write(2, g_what, strlen(g_what));
  (void)w;
  signal(sig, SIG_DFL);
  raise(sig);
}

static uint64_t mtfz_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int mtfz_run_file(const char *path, int allow_fork) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "mtfz_replay: cannot read %s: %s\n", path, strerror(errno));
    return -1;
  }
  g_input_len = fread(g_input, 1, sizeof g_input, f);
  fclose(f);
  g_crash_path[0] = 0;
  snprintf(g_what, sizeof g_what, "mtfz_replay: the failing input is the corpus file %s\n", path);
  mtfz_run(g_input, g_input_len, allow_fork);
  return 1;
}

static int mtfz_run_corpus(const char *path, int allow_fork) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "mtfz_replay: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) return mtfz_run_file(path, allow_fork);
  struct dirent **names;
  int n = scandir(path, &names, NULL, alphasort), count = 0;
  if (n < 0) {
    fprintf(stderr, "mtfz_replay: cannot list %s: %s\n", path, strerror(errno));
    return -1;
  }
  for (int i = 0; i < n; i++) {
    if (names[i]->d_name[0] != '.') {
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", path, names[i]->d_name);
      if (mtfz_run_file(p, allow_fork) < 0) return -1;
      count++;
    }
    free(names[i]);
  }
  free(names);
  return count;
}

static void usage(void) {
  fprintf(stderr, "usage: mtfz_replay [--seeds N] [--seed S] [--len L] [--seconds T] [--no-fork]\n"
                  "                   [--crash-dir D] [corpus file or directory...]\n");
  exit(2);
}

static uint64_t mtfz_number(const char *opt, const char *v) {
  char *end;
  errno = 0;
  unsigned long long x = v ? strtoull(v, &end, 10) : 0;
  if (!v || errno || *end || end == v) {
    fprintf(stderr, "mtfz_replay: %s needs a number, got %s\n", opt, v ? v : "nothing");
    exit(2);
  }
  return x;
}

int main(int argc, char **argv) {
  uint64_t seeds = 0, seed = 1, seconds = 0;
  size_t len = 2048;
  int allow_fork = 1, files = 0, inputs = 0;
  const char *crash_dir = ".";
  struct timespec t0, tg, t1;   /* start (the summary's time), start of the generated inputs */
  clock_gettime(CLOCK_MONOTONIC, &t0);
  signal(SIGABRT, mtfz_on_abort);
  signal(SIGSEGV, mtfz_on_abort);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--seeds")) seeds = mtfz_number(a, argv[++i]);
    else if (!strcmp(a, "--seed")) seed = mtfz_number(a, argv[++i]);
    else if (!strcmp(a, "--len")) len = mtfz_number(a, argv[++i]);
    else if (!strcmp(a, "--seconds")) seconds = mtfz_number(a, argv[++i]);
    else if (!strcmp(a, "--no-fork")) allow_fork = 0;
    else if (!strcmp(a, "--crash-dir")) { if (!(crash_dir = argv[++i])) usage(); }
    else if (a[0] == '-') usage();
    else {
      int n = mtfz_run_corpus(a, allow_fork);
      if (n < 0) return 2;
      files += n;
    }
  }
  if (len < 2 || len > MTFZ_MAX_LEN) {
    fprintf(stderr, "mtfz_replay: --len must be 2..%u\n", MTFZ_MAX_LEN);
    return 2;
  }
  clock_gettime(CLOCK_MONOTONIC, &tg);
  for (uint64_t k = 0; seconds ? 1 : k < seeds; k++) {
    uint64_t s = seed + k, r = s;
    g_input_len = 2 + mtfz_rand(&r) % (len - 1);
    for (size_t i = 0; i < g_input_len; i++) g_input[i] = (uint8_t)mtfz_rand(&r);
    snprintf(g_crash_path, sizeof g_crash_path, "%s/mtfz-crash-%" PRIu64 ".bin", crash_dir, s);
    snprintf(g_what, sizeof g_what, "mtfz_replay: the failing input is seed %" PRIu64
             " (--seed %" PRIu64 " --seeds 1 --len %zu), saved to %s\n", s, s, len, g_crash_path);
    mtfz_run(g_input, g_input_len, allow_fork);
    inputs++;
    if (seconds) {
      clock_gettime(CLOCK_MONOTONIC, &t1);
      if ((uint64_t)(t1.tv_sec - tg.tv_sec) >= seconds) break;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("mtfz_replay: %d corpus files and %d generated inputs (seeds %" PRIu64 "..), %" PRIu64
         " operations, no failure, %.1f s\n", files, inputs, seed, mtfz_ops(),
         (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
  return 0;
}
