#include "kernel_registry.h"

#include <mutex>
#include <unordered_map>

namespace torch_tile {
namespace {

struct KernelRegistry {
  std::mutex mutex;
  std::unordered_map<int64_t, std::shared_ptr<KernelCache>> kernels;
};

KernelRegistry& kernel_registry() {
  static KernelRegistry* r = new KernelRegistry();  // outlives static teardown, as the ops do
  return *r;
}

}  // namespace

std::shared_ptr<KernelCache> kernel_cache_for(int64_t id, const std::string& name) {
  KernelRegistry& r = kernel_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto& slot = r.kernels[id];
  if (!slot) slot = std::make_shared<KernelCache>(id, name);
  return slot;
}

std::shared_ptr<KernelCache> find_kernel_cache(int64_t id) {
  KernelRegistry& r = kernel_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.kernels.find(id);
  return it == r.kernels.end() ? nullptr : it->second;
}

}  // namespace torch_tile
