#include "kernel_cache.h"

#include "counters.h"

namespace torch_tile {

CompiledKernel* KernelCache::find(const SpecializationKey& key) const {
  std::shared_lock<std::shared_mutex> lock(map_mutex_);
  auto it = variants_.find(key);
  return it == variants_.end() ? nullptr : it->second.get();
}

CompiledKernel* KernelCache::get_or_compile(const SpecializationKey& key, int capability) {
  if (CompiledKernel* k = find(key)) return k;
  std::lock_guard<std::mutex> single_flight(compile_mutex_);
  if (CompiledKernel* k = find(key)) return k;  // compiled by another thread meanwhile
  auto compiled = std::make_unique<CompiledKernel>(compiler_->compile(*this, key, capability));
  counters().compiles.fetch_add(1, std::memory_order_relaxed);
  CompiledKernel* raw = compiled.get();
  std::unique_lock<std::shared_mutex> lock(map_mutex_);
  variants_.emplace(key, std::move(compiled));
  return raw;
}

size_t KernelCache::size() const {
  std::shared_lock<std::shared_mutex> lock(map_mutex_);
  return variants_.size();
}

}  // namespace torch_tile
