/* plockstat-resolve: the CLI's batch front end to symbolize.c.
 *
 *   plockstat-resolve [--lines] [--demangle] MAPSFILE < addresses
 *
 * Input: one address per line, "0x55d0c0a02040" or "0x55d0c0a02040 r" for a return address.
 * Output, one tab-separated line per input line:
 *   address  path|-  symbol|-  offset(hex)  file|-  line
 */
#define _GNU_SOURCE
#include "symbolize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* From libstdc++; C linkage.  Only used here, never in the preload library. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

int main(int argc, char **argv) {
  unsigned flags = 0;
  int demangle = 0;
  const char *mapsfile = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--lines")) flags |= PSYM_LINES;
    else if (!strcmp(argv[i], "--demangle")) demangle = 1;
    else mapsfile = argv[i];
  }
  if (!mapsfile) {
    fprintf(stderr, "usage: plockstat-resolve [--lines] [--demangle] MAPSFILE < addresses\n");
    return 2;
  }
  FILE *mf = fopen(mapsfile, "r");
  if (!mf) { perror(mapsfile); return 1; }
  char *maps = NULL;
  size_t cap = 0, n = 0;
  for (;;) {
    if (n + 4096 > cap) {
      cap = cap ? cap * 2 : 65536;
      maps = realloc(maps, cap);
      if (!maps) return 1;
    }
    size_t k = fread(maps + n, 1, cap - n, mf);
    if (!k) break;
    n += k;
  }
  fclose(mf);
  struct psym *s = psym_open(maps, n, flags);
  free(maps);
  if (!s) { fprintf(stderr, "plockstat-resolve: cannot parse maps\n"); return 1; }
  char line[256];
  while (fgets(line, sizeof line, stdin)) {
    char *end;
    unsigned long long a = strtoull(line, &end, 16);
    int ret = strchr(end, 'r') != NULL;
    struct psym_info in;
    int ok = psym_lookup(s, a, ret, &in);
    const char *sym = in.symbol;
    char *dem = NULL;
    if (sym && demangle && sym[0] == '_' && sym[1] == 'Z') {
      int st = 0;
      dem = __cxa_demangle(sym, NULL, NULL, &st);
      if (st == 0 && dem) sym = dem;
    }
    printf("0x%llx\t%s\t%s\t0x%llx\t%s\t%u\n", a, ok == 0 ? in.path : "-", sym ? sym : "-",
           (unsigned long long)in.offset, in.src_file ? in.src_file : "-", in.src_line);
    free(dem);
  }
  psym_close(s);
  return 0;
}
