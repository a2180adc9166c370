// Expected: alloc-dealloc-mismatch (operator new[] vs operator delete), allocated in make_ids.
#include <cstdlib>

static int *make_ids() { return new int[10]; }

int main() {
  int *ids = make_ids();
  ids[0] = 1;
  delete ids;  // BUG: needs delete[]
  return 0;
}
