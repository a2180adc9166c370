// Expected: alloc-dealloc-mismatch (malloc vs operator delete), allocated in make_raw_record.
#include <cstdlib>

struct Record { int a, b; };

static Record *make_raw_record() { return static_cast<Record *>(std::malloc(sizeof(Record))); }

int main() {
  Record *r = make_raw_record();
  delete r;  // BUG: needs free
  return 0;
}
