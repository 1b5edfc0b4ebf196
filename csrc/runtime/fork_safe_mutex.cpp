#include "runtime/fork_safe_mutex.h"

#include <pthread.h>

#include <new>

namespace torch_tile {

// Every live ForkSafeMutex, in a list the fork handlers walk. The list's own
// mutex is held across fork(), so the child never sees it half-changed.
struct LiveForkSafeMutexes {
  std::mutex mutex;
  ForkSafeMutex* head = nullptr;

  static LiveForkSafeMutexes& instance() {
    static LiveForkSafeMutexes* live = [] {
      auto* made = new LiveForkSafeMutexes();  // never destroyed: mutexes may outlive static destruction
      pthread_atfork([] { instance().mutex.lock(); }, [] { instance().mutex.unlock(); },
                     [] { instance().free_in_child(); });
      return made;
    }();
    return *live;
  }

  void add(ForkSafeMutex* m) {
    std::lock_guard<std::mutex> lock(mutex);
    m->next_ = head;
    if (head != nullptr) head->prev_ = m;
    head = m;
  }

  void remove(ForkSafeMutex* m) {
    std::lock_guard<std::mutex> lock(mutex);
    if (m->prev_ != nullptr) m->prev_->next_ = m->next_;
    else head = m->next_;
    if (m->next_ != nullptr) m->next_->prev_ = m->prev_;
  }

  // In the child, which has only the forking thread: what another thread held
  // at the fork is free; the forking thread's own holds stay.
  void free_in_child() {
    const std::thread::id self = std::this_thread::get_id();
    for (ForkSafeMutex* m = head; m != nullptr; m = m->next_) {
      if (m->holder_.load(std::memory_order_relaxed) == self) continue;
      m->holder_.store(std::thread::id(), std::memory_order_relaxed);
      new (&m->mutex_) std::mutex();  // its holder does not exist here: nothing else can release it
    }
    mutex.unlock();  // locked by this thread before the fork
  }
};

ForkSafeMutex::ForkSafeMutex() { LiveForkSafeMutexes::instance().add(this); }

ForkSafeMutex::~ForkSafeMutex() { LiveForkSafeMutexes::instance().remove(this); }

}  // namespace torch_tile
