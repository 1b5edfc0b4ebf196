// The compiled variants of the bundles loaded into this process, by kernel,
// GPU architecture and specialization key. A KernelCache miss looks here
// before it asks its frontend's compiler, so a process with no compiler (a
// LibTorch program: no Python, no Triton) launches what its bundles hold.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/kernels/bundle.h"
#include "runtime/kernels/kernel_cache.h"
#include "runtime/launch/specialization_key.h"

namespace torch_tile {

// The key of these words (word 0: the launch configuration); an Error naming
// `kernel` if there are none or more than a key holds.
SpecializationKey key_of_words(const std::vector<uint64_t>& words, const std::string& kernel);

// Adds a bundle's variant (a later one for the same kernel, key and architecture replaces it).
void add_bundled_variant(const BundledVariant& variant);

// The bundled binary of kernel `kernel_id` for `key` on sm_<capability>, or nullptr.
std::shared_ptr<const KernelBinary> find_bundled_variant(int64_t kernel_id, const SpecializationKey& key,
                                                         int capability);

// A frontend's stand-in in a process that cannot compile (no Python): every
// miss outside the loaded bundles is an Error naming kernel, key and
// architecture, and what to add to the bundle.
class BundleOnlyCompiler final : public Compiler {
 public:
  explicit BundleOnlyCompiler(std::string frontend) : frontend_(std::move(frontend)) {}
  KernelBinary compile(const KernelCache& kernel, const SpecializationKey& key, int capability) override;

 private:
  const std::string frontend_;
};

}  // namespace torch_tile
