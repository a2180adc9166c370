// No bug: every allocation function used correctly, from several threads and across fork().
// Expected: no report at all, exit 0, and mtheap_check_heap() == 0.  Guards against false
// positives (alignment, realloc, sized/aligned delete, calloc zeroing, usable size).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <new>
#include <pthread.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern "C" int mtheap_check_heap(void) __attribute__((weak));
// C23 (glibc 2.36 does not declare them yet); libmtheap-debug.so defines both
extern "C" void free_sized(void *, size_t) __attribute__((weak));
extern "C" void free_aligned_sized(void *, size_t, size_t) __attribute__((weak));

struct alignas(64) Line { char bytes[64]; };
struct Base { virtual ~Base() {} int a = 0; };
struct Derived : Base { int more[8] = {}; };

static int fail(const char *what) {
  std::fprintf(stderr, "clean_program: %s\n", what);
  return 1;
}

static void *worker(void *arg) {
  std::vector<std::string> v;
  for (int i = 0; i < 2000; i++) v.push_back(std::string(i % 50, 'x'));
  for (int i = 0; i < 500; i++) {
    char *p = static_cast<char *>(std::malloc(i + 1));
    std::memset(p, 1, i + 1);
    p = static_cast<char *>(std::realloc(p, 2 * i + 3));
    p[2 * i + 2] = 0;
    std::free(p);
  }
  return arg;
}

int main() {
  int bad = 0;
  char *z = static_cast<char *>(std::calloc(100, 3));
  for (int i = 0; i < 300; i++) if (z[i]) bad |= fail("calloc not zero");
  std::free(z);
  void *a = nullptr;
  if (posix_memalign(&a, 256, 1000) || ((uintptr_t)a & 255)) bad |= fail("posix_memalign");
  std::memset(a, 2, 1000);
  std::free(a);
  void *b = aligned_alloc(4096, 8192);
  if ((uintptr_t)b & 4095) bad |= fail("aligned_alloc");
  if (free_aligned_sized) free_aligned_sized(b, 4096, 8192); else std::free(b);
  void *c = memalign(64, 7);
  if (malloc_usable_size(c) < 7) bad |= fail("usable size");
  std::memset(c, 3, malloc_usable_size(c));
  if (free_sized) free_sized(c, 7); else std::free(c);
  Line *l = new Line[3];
  if ((uintptr_t)l & 63) bad |= fail("aligned new[]");
  delete[] l;
  Line *l1 = new Line;
  delete l1;
  Base *d = new Derived;
  delete d;
  int *n = new (std::nothrow) int[5];
  delete[] n;
  char *s = strdup("a string of some length");
  s = static_cast<char *>(std::realloc(s, 3));
  s[2] = 0;
  std::free(s);
  std::free(std::malloc(0));
  std::free(nullptr);

  pthread_t t[3];
  for (auto &x : t) pthread_create(&x, nullptr, worker, nullptr);
  for (auto &x : t) pthread_join(x, nullptr);

  pid_t pid = fork();
  if (pid == 0) {
    worker(nullptr);
    _exit(mtheap_check_heap ? mtheap_check_heap() : 0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad |= fail("child after fork");
  if (!mtheap_check_heap) bad |= fail("mtheap_check_heap not found: not run under libmtheap-debug.so");
  else if (mtheap_check_heap() != 0) bad |= fail("mtheap_check_heap found errors");
  std::puts(bad ? "FAIL" : "OK");
  return bad;
}
