// All compiled variants of one frontend kernel (one @triton.jit function),
// keyed by specialization. Reads take a shared lock; a miss compiles once
// (single flight) with the kernel's own frontend compiler.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/kernels/compiled_kernel.h"
#include "runtime/fork_safe_mutex.h"
#include "runtime/launch/specialization_key.h"

namespace torch_tile {

class KernelCache;

// The frontend that turns (kernel, key, target) into a binary. The Python
// layer implements it by calling Triton; it runs only on a cache miss.
class Compiler {
 public:
  virtual ~Compiler() = default;
  virtual KernelBinary compile(const KernelCache& kernel, const SpecializationKey& key,
                               int capability) = 0;
};

class KernelCache {
 public:
  KernelCache(int64_t id, std::string name, std::string frontend, std::shared_ptr<Compiler> compiler)
      : id_(id), name_(std::move(name)), frontend_(std::move(frontend)), compiler_(std::move(compiler)) {}
  int64_t id() const { return id_; }
  const std::string& name() const { return name_; }
  const std::string& frontend() const { return frontend_; }

  CompiledKernel* find(const SpecializationKey& key) const;
  // find(), or compile for `capability` and insert.
  CompiledKernel* get_or_compile(const SpecializationKey& key, int capability);
  // The binary for `key` on sm_<capability> (a loaded bundle's, else the
  // frontend's compile), not inserted: for a bundle, any architecture.
  KernelBinary compile(const SpecializationKey& key, int capability) const;
  size_t size() const;

  // A copy of each compiled variant (to export in a bundle).
  struct Variant {
    std::vector<uint64_t> key;
    int capability = 0;
    KernelBinary binary;
  };
  std::vector<Variant> variants() const;

 private:
  const int64_t id_;
  const std::string name_;
  const std::string frontend_;
  const std::shared_ptr<Compiler> compiler_;
  mutable std::shared_mutex map_mutex_;
  ForkSafeMutex compile_mutex_;  // single flight: one compile at a time per kernel (held while Python compiles)
  std::unordered_map<SpecializationKey, std::unique_ptr<CompiledKernel>, SpecializationKeyHash> variants_;
};

}  // namespace torch_tile
