#include "runtime/launch/inline_cache.h"

namespace torch_tile {

CompiledKernel* InlineCache::lookup(const SpecializationKey& key) const {
  const uint64_t before = sequence_.load(std::memory_order_acquire);
  if ((before & 1) != 0 || size_.load(std::memory_order_relaxed) != key.size) return nullptr;
  for (uint32_t i = 0; i < key.size; ++i) {
    if (words_[i].load(std::memory_order_relaxed) != key.words[i]) return nullptr;
  }
  CompiledKernel* kernel = kernel_.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);  // the reads above happen before the check below
  return sequence_.load(std::memory_order_relaxed) == before ? kernel : nullptr;
}

void InlineCache::remember(const SpecializationKey& key, CompiledKernel* kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t sequence = sequence_.load(std::memory_order_relaxed);
  sequence_.store(sequence + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);  // the odd sequence is seen before any write below
  size_.store(key.size, std::memory_order_relaxed);
  for (uint32_t i = 0; i < key.size; ++i) words_[i].store(key.words[i], std::memory_order_relaxed);
  kernel_.store(kernel, std::memory_order_relaxed);
  sequence_.store(sequence + 2, std::memory_order_release);
}

size_t InlineCache::entry_count() const { return size_.load(std::memory_order_acquire) != 0 ? 1 : 0; }

}  // namespace torch_tile
