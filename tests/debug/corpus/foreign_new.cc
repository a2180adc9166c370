// No bug: objects cross between a library that brings its own operator new/delete (bound to
// itself, foreign_new_lib.cc, the shape of libLLVM) and the program, which uses the global
// ones, in both directions; every block is released by a C++ operator.  The debug library's
// operators see malloc + operator delete and operator new + free here.
// Expected: no report, exit 0, stdout OK (rust-lld aborted on its first such string).
// With the argument "bug": then an alloc-dealloc-mismatch (operator new[] vs free) of the
// program's own, allocated in make_scratch and freed in drop_scratch.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

struct Label { std::string text; int uses; };
Label *lib_make_label(const char *s);
std::string lib_describe(int n);
int *lib_make_counts(int n);
void lib_drop_label(Label *l);
void lib_drop_counts(int *c);

static int *make_scratch() { return new int[16]; }
static void drop_scratch(int *p) { std::free(p); }  // BUG (with "bug"): needs delete[]

int main(int argc, char **argv) {
  long total = 0;
  for (int i = 0; i < 200; i++) {
    Label *a = lib_make_label("made in the library");
    total += (long)a->text.size();
    delete a;                                   // the library's new, the program's delete
    std::string d = lib_describe(i);            // destroyed here
    total += (long)d.size();
    int *c = lib_make_counts(10 + i % 7);
    total += c[9];
    delete[] c;                                 // the library's new[] (its new), our delete[]
    Label *b = new Label{std::string(50, 'p'), 2};
    lib_drop_label(b);                          // our new, the library's delete (free)
    int *e = new int[12];
    lib_drop_counts(e);                         // our new[], the library's delete[]
  }
  if (total <= 0) return 1;
  if (argc > 1 && std::strcmp(argv[1], "bug") == 0) drop_scratch(make_scratch());
  std::puts("OK");
  return 0;
}
