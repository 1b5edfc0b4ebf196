#include "inline_cache.h"

namespace torch_tile {

CompiledKernel* InlineCache::lookup(const SpecializationKey& key) const {
  const Entry* e = last_.load(std::memory_order_acquire);
  return (e != nullptr && e->key == key) ? e->kernel : nullptr;
}

void InlineCache::remember(const SpecializationKey& key, CompiledKernel* kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::unique_ptr<Entry>& entry = entries_[key];
  if (!entry) entry = std::make_unique<Entry>(Entry{key, kernel});
  last_.store(entry.get(), std::memory_order_release);
}

size_t InlineCache::entry_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

}  // namespace torch_tile
