// A mutex that a child made by fork() gets free when another thread of the
// parent held it.
//
// A forked child has only the thread that called fork(). The mutexes held
// while Python runs (an op's trace mutex while its body is traced, a kernel's
// compile mutex while its frontend compiles, the bundle loader's while it
// installs plans) are the ones another thread is likely to hold when a Python
// program forks (os.fork, multiprocessing, DataLoader workers); in the child no
// thread would ever release them, and its first call needing one would wait
// forever. A pthread_atfork handler makes every live ForkSafeMutex free again
// in the child, except those the forking thread holds itself (it releases them).
#pragma once

#include <atomic>
#include <mutex>
#include <thread>

namespace torch_tile {

class ForkSafeMutex {
 public:
  ForkSafeMutex();
  ~ForkSafeMutex();
  ForkSafeMutex(const ForkSafeMutex&) = delete;
  ForkSafeMutex& operator=(const ForkSafeMutex&) = delete;

  void lock() {
    mutex_.lock();
    holder_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
  bool try_lock() {
    if (!mutex_.try_lock()) return false;
    holder_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    return true;
  }
  void unlock() {
    holder_.store(std::thread::id(), std::memory_order_relaxed);
    mutex_.unlock();
  }

 private:
  friend struct LiveForkSafeMutexes;
  std::mutex mutex_;
  std::atomic<std::thread::id> holder_{};  // set by the holding thread itself, before it can fork
  ForkSafeMutex* prev_ = nullptr;  // the live mutexes, for the handler
  ForkSafeMutex* next_ = nullptr;
};

}  // namespace torch_tile
