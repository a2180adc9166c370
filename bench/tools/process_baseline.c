/* process_baseline: what an allocator adds to the smallest process.  It mallocs and frees one
 * block of SIZE bytes COUNT times, then prints every mapping of /proc/self/smaps that has
 * resident pages (KiB, permissions, length, name) and the total: the per-process baseline that
 * decides the peak RSS of every small program, where the allocator's own file pages, its
 * metadata and the libc pages its start-up calls fault in (64 KiB fault-around windows) are
 * all there is to compare.
 *
 *   process_baseline [COUNT [SIZE]]     e.g. LD_PRELOAD=... process_baseline 1000 64
 *
 * Run each allocator several times, interleaved: where ASLR puts libc decides which of its
 * windows a call lands in, so libc's share varies run to run (docs/PERFORMANCE.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long number(const char *s, long dflt) {
  if (!s) return dflt;
  char *end;
  long v = strtol(s, &end, 10);
  return end == s || *end ? -1 : v;
}

int main(int argc, char **argv) {
  long count = number(argc > 1 ? argv[1] : NULL, 1000);
  long size = number(argc > 2 ? argv[2] : NULL, 64);
  if (count < 0 || size < 1 || argc > 3) {
    fprintf(stderr, "usage: process_baseline [COUNT [SIZE]]\n");
    return 2;
  }
  for (long i = 0; i < count; i++) {
    volatile char *p = malloc((size_t)size);
    if (!p) {
      fprintf(stderr, "process_baseline: malloc(%ld) failed\n", size);
      return 1;
    }
    p[0] = 1;
    free((void *)p);
  }
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) {
    perror("process_baseline: /proc/self/smaps");
    return 1;
  }
  char line[512], cur[400] = "";
  unsigned long total = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi, rss;
    char perms[8], name[256] = "";
    /* a mapping's first line starts "lo-hi perms"; its fields ("Rss:  4 kB") follow */
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perms, name) >= 3) {
      snprintf(cur, sizeof cur, "%-5s %8lu KiB  %s", perms, (hi - lo) >> 10, name[0] ? name : "[anon]");
    } else if (sscanf(line, "Rss: %lu", &rss) == 1 && rss) {
      printf("%6lu  %s\n", rss, cur);
      total += rss;
    }
  }
  fclose(f);
  printf("%6lu  total (KiB resident)\n", total);
  return 0;
}
