// C++: std::mutex, std::shared_mutex and std::condition_variable all reach the pthread
// functions plockstat interposes.  Known answers: g_mutex blocks two threads, a writer blocks
// on g_shared behind a reader, one condition_variable wait_for times out.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <shared_mutex>
#include <thread>

std::mutex g_mutex;
std::shared_mutex g_shared;
std::mutex g_cv_mutex;
std::condition_variable g_cv;

std::atomic<int> arrived;

__attribute__((noinline)) void worker() {
  arrived++;
  std::lock_guard<std::mutex> g(g_mutex);
}

__attribute__((noinline)) void shared_writer() {
  std::unique_lock<std::shared_mutex> w(g_shared);
}

int main() {
  {
    std::unique_lock<std::mutex> hold(g_mutex);
    std::thread a(worker), b(worker);
    // both started and one sleeps in the lock (glibc: __lock == 2); then give the other time
    for (int i = 0; i < 10000 && (arrived < 2 || __atomic_load_n(&g_mutex.native_handle()->__data.__lock,
                                                                  __ATOMIC_ACQUIRE) != 2); i++)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    hold.unlock();
    a.join();
    b.join();
  }
  {
    std::shared_lock<std::shared_mutex> r(g_shared);
    std::thread w(shared_writer);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    r.unlock();
    w.join();
  }
  {
    std::unique_lock<std::mutex> l(g_cv_mutex);
    bool woke = g_cv.wait_for(l, std::chrono::milliseconds(50), [] { return false; });
    std::printf("cxx done %d\n", woke);
  }
  return 0;
}
