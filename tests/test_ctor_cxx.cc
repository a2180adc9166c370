// C++ static initialisers that allocate before main (linked with libmtheap.so): a global
// container and string built during static initialisation are mtheap's, intact in main, and
// destroyed cleanly at exit (after which the allocator must still answer free()).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "mtheap.h"

#define CHECK(cond)                                                        \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                        \
    }                                                                      \
  } while (0)

static std::vector<std::string> make_strings() {
  std::vector<std::string> v;
  for (int i = 0; i < 5000; i++) v.push_back(std::string(std::size_t(i % 200 + 1), char('a' + i % 26)));
  return v;
}

static std::vector<std::string> g_strings = make_strings();
static std::map<int, std::unique_ptr<int[]>> g_map = [] {
  std::map<int, std::unique_ptr<int[]>> m;
  for (int i = 0; i < 1000; i++) {
    m[i].reset(new int[std::size_t(i) + 1]);
    m[i][i] = i;
  }
  return m;
}();
static std::string *g_leak_until_exit = new std::string(100000, 'x');

struct Late {
  ~Late() {
    // Runs during exit, after other destructors may have freed memory.
    std::string *s = new std::string(5000, 'y');
    delete s;
  }
} g_late;

int main() {
  CHECK(g_strings.size() == 5000);
  for (int i = 0; i < 5000; i++)
    CHECK(g_strings[i].size() == std::size_t(i % 200 + 1) && g_strings[i][0] == char('a' + i % 26));
  CHECK(mtheap_owns(g_strings.data()) && mtheap_owns(g_strings[4999].data()));
  for (int i = 0; i < 1000; i++) CHECK(g_map[i][i] == i && mtheap_owns(g_map[i].get()));
  CHECK(mtheap_owns(g_leak_until_exit) && mtheap_owns(g_leak_until_exit->data()));
  delete g_leak_until_exit;
  std::printf("test_ctor_cxx: passed\n");
  return 0;
}
