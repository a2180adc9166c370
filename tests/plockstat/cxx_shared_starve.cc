// The reader-starved writer of rwlock_starve.c with std::shared_mutex, which has no writer
// preference to ask for: plockstat's advice must say what works for it, not name a pthread
// attribute that std::shared_mutex cannot take.  Built with -g: the inlined lock calls' lines
// point into <shared_mutex>, which is how plockstat tells.
#include <atomic>
#include <chrono>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

std::shared_mutex table_lock;
static std::atomic<int> stop, holders;

static void reader() {
  while (!stop) {
    std::shared_lock<std::shared_mutex> r(table_lock);
    holders++;
    std::this_thread::sleep_for(std::chrono::microseconds(1000));
    while (holders < 2 && !stop) std::this_thread::sleep_for(std::chrono::microseconds(100));
    holders--;
    r.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

static void writer() {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::unique_lock<std::shared_mutex> w(table_lock);
}

int main() {
  std::vector<std::thread> rs;
  for (int i = 0; i < 4; i++) {
    rs.emplace_back(reader);
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  std::thread w(writer);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  stop = 1;
  for (auto &t : rs) t.join();
  w.join();
  return 0;
}
