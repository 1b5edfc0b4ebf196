#include "runtime/kernels/kernel_cache.h"

#include "runtime/kernels/bundled_variants.h"
#include "runtime/counters.h"
#include "runtime/error.h"

namespace torch_tile {

CompiledKernel* KernelCache::find(const SpecializationKey& key) const {
  std::shared_lock<std::shared_mutex> lock(map_mutex_);
  auto it = variants_.find(key);
  return it == variants_.end() ? nullptr : it->second.get();
}

CompiledKernel* KernelCache::get_or_compile(const SpecializationKey& key, int capability) {
  if (CompiledKernel* k = find(key)) return k;
  std::lock_guard<ForkSafeMutex> single_flight(compile_mutex_);
  if (CompiledKernel* k = find(key)) return k;  // compiled by another thread meanwhile
  auto compiled = std::make_unique<CompiledKernel>(compile(key, capability), capability);
  counters().compiles.fetch_add(1, std::memory_order_relaxed);
  CompiledKernel* raw = compiled.get();
  std::unique_lock<std::shared_mutex> lock(map_mutex_);
  variants_.emplace(key, std::move(compiled));
  return raw;
}

std::vector<KernelCache::Variant> KernelCache::variants() const {
  std::shared_lock<std::shared_mutex> lock(map_mutex_);
  std::vector<Variant> out;
  for (const auto& [key, kernel] : variants_) {
    Variant v;
    v.key.assign(key.words, key.words + key.size);
    v.capability = kernel->capability();
    v.binary = kernel->binary();
    out.push_back(std::move(v));
  }
  return out;
}

KernelBinary KernelCache::compile(const SpecializationKey& key, int capability) const {
  // A loaded bundle's variant first: a process without a compiler has only those.
  if (const std::shared_ptr<const KernelBinary> bundled = find_bundled_variant(id_, key, capability)) return *bundled;
  if (!compiler_) fail(ErrorKind::Runtime, "kernel " + name_ + " has no compiler in this process");
  return compiler_->compile(*this, key, capability);
}

size_t KernelCache::size() const {
  std::shared_lock<std::shared_mutex> lock(map_mutex_);
  return variants_.size();
}

}  // namespace torch_tile
