// C++ allocation through mtheap: every operator new/delete form is replaced (mtheap_owns() is
// true for what they return), aligned new honours the alignment, impossible sizes throw
// std::bad_alloc (or give nullptr for nothrow), and the standard containers work on top.
// Built with -fno-allocation-dce so the compiler cannot elide the new/delete pairs under test.
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "mtheap.h"

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);   \
      std::abort();                                                          \
    }                                                                        \
  } while (0)

static volatile std::size_t v_zero = 0;

static bool aligned(const void *p, std::size_t a) { return (reinterpret_cast<std::uintptr_t>(p) & (a - 1)) == 0; }

struct alignas(256) Wide {
  unsigned char bytes[1000];
};

struct Counted {
  static int live;
  std::uint64_t v[5];
  Counted() { live++; for (auto &x : v) x = 0x1111; }
  ~Counted() { live--; }
};
int Counted::live = 0;

int main() {
  // Plain forms.
  int *i = new int(42);
  CHECK(mtheap_owns(i) && *i == 42);
  delete i;

  int *arr = new int[1000];
  CHECK(mtheap_owns(arr));
  for (int k = 0; k < 1000; k++) arr[k] = k;
  for (int k = 0; k < 1000; k++) CHECK(arr[k] == k);
  delete[] arr;

  Counted *cs = new Counted[17];  // array cookie in front: the pointer is interior to the block
  CHECK(Counted::live == 17 && mtheap_owns(cs));
  delete[] cs;
  CHECK(Counted::live == 0);

  // Direct operator calls, including sized delete (what -fsized-deallocation emits).
  for (std::size_t n : {std::size_t(1), std::size_t(24), std::size_t(4096), std::size_t(300000),
                        std::size_t(6) << 20}) {
    void *p = ::operator new(n + v_zero);
    CHECK(p && mtheap_owns(p) && aligned(p, n >= 16 ? 16 : 1) && mtheap_usable_size(p) >= n);
    std::memset(p, 0x5a, n);
    ::operator delete(p, n);
    void *q = ::operator new[](n + v_zero);
    CHECK(q && mtheap_owns(q));
    ::operator delete[](q, n);
  }

  // nothrow.
  int *nt = new (std::nothrow) int[10];
  CHECK(nt && mtheap_owns(nt));
  delete[] nt;
  void *ntp = ::operator new(100, std::nothrow);
  CHECK(ntp && mtheap_owns(ntp));
  ::operator delete(ntp, std::nothrow);

  // Aligned new: type-driven and explicit.
  Wide *w = new Wide;
  CHECK(aligned(w, 256) && mtheap_owns(w));
  std::memset(w->bytes, 1, sizeof w->bytes);
  delete w;
  Wide *wa = new Wide[7];
  CHECK(aligned(wa, 256) && mtheap_owns(wa));
  delete[] wa;
  std::vector<Wide> wv(33);
  CHECK(aligned(wv.data(), 256) && mtheap_owns(wv.data()));

  char *c4k = new (std::align_val_t(4096)) char[100];
  CHECK(aligned(c4k, 4096) && mtheap_owns(c4k));
  std::memset(c4k, 2, 100);
  ::operator delete[](c4k, std::align_val_t(4096));

  for (std::size_t al = 32; al <= (std::size_t(1) << 22); al *= 2) {
    void *p = ::operator new(al + 3 + v_zero, std::align_val_t(al));
    CHECK(aligned(p, al) && mtheap_owns(p));
    std::memset(p, 3, al + 3);
    ::operator delete(p, al + 3, std::align_val_t(al));
    void *q = ::operator new[](100 + v_zero, std::align_val_t(al), std::nothrow);
    CHECK(q && aligned(q, al) && mtheap_owns(q));
    ::operator delete[](q, std::align_val_t(al), std::nothrow);
    void *r = ::operator new(100 + v_zero, std::align_val_t(al));
    ::operator delete(r, std::align_val_t(al));
  }

  // Impossible sizes.
  bool threw = false;
  try {
    void *p = ::operator new(SIZE_MAX / 2 + v_zero);
    std::fprintf(stderr, "operator new(SIZE_MAX/2) returned %p\n", p);
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  CHECK(threw);
  threw = false;
  try {
    void *p = ::operator new[](SIZE_MAX - 64 + v_zero);
    std::fprintf(stderr, "operator new[](SIZE_MAX-64) returned %p\n", p);
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  CHECK(threw);
  threw = false;
  try {
    void *p = ::operator new(SIZE_MAX / 2 + v_zero, std::align_val_t(4096));
    std::fprintf(stderr, "aligned operator new(SIZE_MAX/2) returned %p\n", p);
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  CHECK(threw);
  CHECK(::operator new(SIZE_MAX / 2 + v_zero, std::nothrow) == nullptr);
  CHECK(::operator new[](SIZE_MAX / 2 + v_zero, std::nothrow) == nullptr);
  CHECK(::operator new(SIZE_MAX / 2 + v_zero, std::align_val_t(64), std::nothrow) == nullptr);

  // new_handler: operator new retries through it, as the standard requires.
  static int handler_calls;
  handler_calls = 0;
  std::set_new_handler([] {
    if (++handler_calls >= 3) std::set_new_handler(nullptr);
  });
  threw = false;
  try {
    void *p = ::operator new(SIZE_MAX / 2 + v_zero);
    std::fprintf(stderr, "operator new returned %p\n", p);
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  CHECK(threw && handler_calls == 3);

  // Containers and strings, across threads (blocks freed by a thread other than the allocator).
  std::vector<std::unique_ptr<std::string>> strs;
  std::thread producer([&] {
    for (int k = 0; k < 20000; k++) strs.emplace_back(new std::string(std::string(k % 300 + 20, 'a' + k % 26)));
  });
  producer.join();
  std::map<int, std::string> m;
  for (int k = 0; k < 20000; k++) {
    CHECK(mtheap_owns(strs[k].get()) && (*strs[k])[0] == char('a' + k % 26));
    m[k] = *strs[k];
  }
  strs.clear();
  for (int k = 0; k < 20000; k++) CHECK(m[k].size() == std::size_t(k % 300 + 20));
  std::printf("test_cxx: all checks passed\n");
  return 0;
}
