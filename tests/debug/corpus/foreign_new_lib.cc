// A library with its own C++ operators, linked -Bsymbolic so that its own news and deletes bind
// to them even when a preloaded library defines the same symbols: the shape of libLLVM (rustc's
// linker, Mesa, clang).  Its new calls malloc and its delete calls free; its new[] runs into its
// new and its delete[] into its delete, as libLLVM's do.  Used by foreign_new.cc (legal) and
// foreign_new_free.cc (a bug).
#include <cstdlib>
#include <new>
#include <string>

void *operator new(std::size_t n) {
  if (void *p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void *operator new[](std::size_t n) { return ::operator new(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { ::operator delete(p); }
void operator delete[](void *p, std::size_t) noexcept { ::operator delete(p); }

struct Label { std::string text; int uses; };

// made here, destroyed by the caller (with the program's operator delete)
Label *lib_make_label(const char *s) { return new Label{std::string(s) + " (a label long enough for the heap)", 1}; }
std::string lib_describe(int n) { return std::string(40 + n % 20, 'd'); }
int *lib_make_counts(int n) {
  int *c = new int[n];
  for (int i = 0; i < n; i++) c[i] = i;
  return c;
}

// made by the caller (with the program's operator new), destroyed here
void lib_drop_label(Label *l) { delete l; }
void lib_drop_counts(int *c) { delete[] c; }
