#include "runtime/kernels/bundled_variants.h"

#include <mutex>
#include <unordered_map>

#include "runtime/error.h"

namespace torch_tile {
namespace {

struct VariantId {
  int64_t kernel = 0;
  int32_t capability = 0;
  SpecializationKey key;
  bool operator==(const VariantId& o) const {
    return kernel == o.kernel && capability == o.capability && key == o.key;
  }
};

struct VariantIdHash {
  size_t operator()(const VariantId& v) const {
    return size_t(v.key.hash() ^ (uint64_t(v.kernel) * 0x9e3779b97f4a7c15ULL) ^ uint64_t(v.capability));
  }
};

struct BundledVariants {
  std::mutex mutex;  // misses only: never on the launch path
  std::unordered_map<VariantId, std::shared_ptr<const KernelBinary>, VariantIdHash> variants;
};

BundledVariants& bundled() {
  static BundledVariants* b = new BundledVariants();  // outlives static teardown, as the kernel caches do
  return *b;
}

VariantId variant_id(int64_t kernel, const SpecializationKey& key, int capability) {
  VariantId id;
  id.kernel = kernel;
  id.capability = capability;
  id.key = key;
  return id;
}

std::string key_text(const SpecializationKey& key) {
  std::string s = "[";
  for (uint32_t i = 0; i < key.size; ++i) s += (i ? ", " : "") + std::to_string(key.words[i]);
  return s + "]";
}

}  // namespace

SpecializationKey key_of_words(const std::vector<uint64_t>& words, const std::string& kernel) {
  if (words.empty() || words.size() > size_t(kMaxKernelParams + 1)) {
    fail(ErrorKind::Value, "a variant key of " + std::to_string(words.size()) + " words for kernel " + kernel +
                               " (1 to " + std::to_string(kMaxKernelParams + 1) + " expected)");
  }
  SpecializationKey key;
  for (uint64_t word : words) key.push(word);
  return key;
}

void add_bundled_variant(const BundledVariant& v) {
  const SpecializationKey key = key_of_words(v.key, v.kernel.name);
  auto binary = std::make_shared<const KernelBinary>(v.binary);
  BundledVariants& b = bundled();
  std::lock_guard<std::mutex> lock(b.mutex);
  b.variants[variant_id(v.kernel.id, key, v.capability)] = std::move(binary);
}

std::shared_ptr<const KernelBinary> find_bundled_variant(int64_t kernel_id, const SpecializationKey& key,
                                                         int capability) {
  BundledVariants& b = bundled();
  std::lock_guard<std::mutex> lock(b.mutex);
  auto it = b.variants.find(variant_id(kernel_id, key, capability));
  return it == b.variants.end() ? nullptr : it->second;
}

KernelBinary BundleOnlyCompiler::compile(const KernelCache& kernel, const SpecializationKey& key, int capability) {
  fail(ErrorKind::Runtime,
       "kernel " + kernel.name() + " (id " + std::to_string(kernel.id()) + "): no variant for key " + key_text(key) +
           " on sm_" + std::to_string(capability) + " in the loaded bundles, and this process cannot compile " +
           "frontend '" + frontend_ + "' kernels (no Python). Export the bundle from a process that made this " +
           "call (torch_tile.export_bundle), for this architecture (capabilities=[" + std::to_string(capability) +
           "])");
}

}  // namespace torch_tile
