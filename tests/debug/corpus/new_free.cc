// Expected: alloc-dealloc-mismatch (operator new vs free), allocated in make_widget.
#include <cstdlib>

struct Widget { int id; double weight; };

static Widget *make_widget() { return new Widget{1, 2.0}; }

int main() {
  Widget *w = make_widget();
  std::free(w);  // BUG: needs delete
  return 0;
}
