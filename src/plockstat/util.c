/* util.c: small async-signal-safe helpers: anonymous memory, dlsym, and reading a thread's
 * /proc entries without stdio (the program may be inside malloc or a signal handler). */
#include "ps.h"

void *map_zero(size_t n) {
  void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}
void *resolve(const char *name, const char *ver) {
  void *p = ver ? dlvsym(RTLD_NEXT, name, ver) : NULL;
  if (!p) p = dlsym(RTLD_NEXT, name);
  return p;
}
size_t slen(const char *s) { size_t n = 0; while (s[n]) n++; return n; }
int read_small(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  if (n < 0) return -1;
  buf[n] = 0;
  return (int)n;
}
uint64_t parse_u64(const char **pp) {
  const char *p = *pp;
  uint64_t v = 0;
  while (*p == ' ') p++;
  while (*p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
  *pp = p;
  return v;
}
/* /proc/self/task/<tid>/<file>, into a buffer of at least 64 bytes. */
static void task_path(char *out, int tid, const char *file) {
  const char *pre = "/proc/self/task/";
  while (*pre) *out++ = *pre++;
  char tmp[16]; int n = 0; unsigned v = (unsigned)tid;
  do { tmp[n++] = (char)('0' + v % 10); v /= 10; } while (v);
  while (n) *out++ = tmp[--n];
  *out++ = '/';
  while (*file) *out++ = *file++;
  *out = 0;
}
/* schedstat: time on cpu and time waiting on a runqueue, in ns. */
void read_schedstat(int tid, uint64_t *run, uint64_t *lat) {
  char path[64], buf[128];
  task_path(path, tid, "schedstat");
  *run = *lat = 0;
  if (read_small(path, buf, sizeof buf) <= 0) return;
  const char *p = buf;
  *run = parse_u64(&p);
  *lat = parse_u64(&p);
}
void read_comm(int tid, char out[16]) {
  char path[64], buf[32];
  task_path(path, tid, "comm");
  if (read_small(path, buf, sizeof buf) <= 0) return;
  int i = 0;
  for (; i < 15 && buf[i] && buf[i] != '\n'; i++) out[i] = buf[i] == ' ' ? '_' : buf[i];
  out[i] = 0;
}
