// Monomorphic inline cache of a launch step: the last key and its variant,
// checked before the kernel's hash map on every call (see
// docs/ARCHITECTURE.md, "One call"). Entries are immutable once published.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "specialization_key.h"

namespace torch_tile {

class CompiledKernel;

class InlineCache {
 public:
  // The variant of `key` if it is the last one remembered, else nullptr.
  CompiledKernel* lookup(const SpecializationKey& key) const;
  // Publishes (key, kernel) as the last variant. Readers may still hold the
  // entry published before, so entries live as long as the cache; each
  // distinct key has one, reused when the call site alternates between
  // variants, so memory stays bounded by the variants the site has used.
  void remember(const SpecializationKey& key, CompiledKernel* kernel);
  size_t entry_count() const;

 private:
  struct Entry {
    SpecializationKey key;
    CompiledKernel* kernel;
  };
  std::atomic<const Entry*> last_{nullptr};
  mutable std::mutex mutex_;
  std::unordered_map<SpecializationKey, std::unique_ptr<Entry>, SpecializationKeyHash> entries_;
};

}  // namespace torch_tile
