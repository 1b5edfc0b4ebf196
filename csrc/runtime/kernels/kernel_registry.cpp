#include "runtime/kernels/kernel_registry.h"

#include <mutex>
#include <unordered_map>

#include "runtime/error.h"

namespace torch_tile {
namespace {

struct KernelRegistry {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<Compiler>> frontends;
  std::unordered_map<int64_t, std::shared_ptr<KernelCache>> kernels;
};

KernelRegistry& kernel_registry() {
  static KernelRegistry* r = new KernelRegistry();  // outlives static teardown, as the ops do
  return *r;
}

}  // namespace

void register_frontend(const std::string& name, std::shared_ptr<Compiler> compiler) {
  if (!compiler) fail(ErrorKind::Value, "frontend " + name + ": no compiler given");
  KernelRegistry& r = kernel_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.frontends[name] = std::move(compiler);
}

void register_frontend_if_absent(const std::string& name, std::shared_ptr<Compiler> compiler) {
  if (!compiler) fail(ErrorKind::Value, "frontend " + name + ": no compiler given");
  KernelRegistry& r = kernel_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.frontends.emplace(name, std::move(compiler));
}

std::shared_ptr<KernelCache> kernel_cache_for(int64_t id, const std::string& name, const std::string& frontend) {
  KernelRegistry& r = kernel_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto compiler = r.frontends.find(frontend);
  if (compiler == r.frontends.end()) {
    fail(ErrorKind::Runtime, "kernel " + name + ": frontend '" + frontend + "' is not registered");
  }
  auto& slot = r.kernels[id];
  if (!slot) slot = std::make_shared<KernelCache>(id, name, frontend, compiler->second);
  if (slot->frontend() != frontend) {
    fail(ErrorKind::Runtime, "kernel id " + std::to_string(id) + " (" + name + ") is a kernel of frontend '" +
                                 slot->frontend() + "', not '" + frontend + "'");
  }
  return slot;
}

std::shared_ptr<KernelCache> find_kernel_cache(int64_t id) {
  KernelRegistry& r = kernel_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.kernels.find(id);
  return it == r.kernels.end() ? nullptr : it->second;
}

}  // namespace torch_tile
