// torch_tile::load_bundle (csrc/include/torch_tile/torch_tile.h): a bundle's
// ops registered with the dispatcher from C++, with no Python. An op the
// process does not have is defined from its schema and gets the native CUDA
// kernel, the autograd kernels (calls needing a gradient are refused: the
// backward lives in Python) and a tracer that explains a miss instead of
// tracing; an op it has (defined from Python) only gets the plans.
#include <torch_tile/torch_tile.h>

#include <cstdio>
#include <mutex>

#include "../runtime/bundle.h"
#include "../runtime/bundled_variants.h"
#include "../runtime/kernel_registry.h"
#include "../runtime/plan_set.h"
#include "aten_step.h"
#include "autograd_kernel.h"
#include "error_translation.h"
#include "native_op.h"
#include "op_library.h"

#ifndef TORCH_TILE_VERSION
#error "TORCH_TILE_VERSION is defined by setup.py from torch_tile/_version.py"
#endif

namespace torch_tile {
namespace {

// A miss in a process that cannot trace: says which guard each plan fails.
class BundleTracer final : public PlanTracer {
 public:
  std::unique_ptr<LaunchPlan> trace(NativeOp& op, const CallArgs& args, const torch::jit::Stack&, size_t) override {
    std::string why;
    const int n = op.plans().size();
    for (int i = 0; i < n && i < 4; ++i) why += "\n  plan " + std::to_string(i) + ": " + plan_mismatch(op.plans().at(i), args);
    fail(ErrorKind::Value, op.qualname() + ": no plan of the loaded bundles covers this call" +
                               (n == 0 ? std::string(" (the bundle has no plans for this op)") : ":" + why) +
                               "\nExport the bundle from a process that made this call (new dtypes, ranks, list "
                               "lengths or branches on sizes need their own plan).");
  }
};

std::mutex& load_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}

// Defines the op from its serialized signature and registers its kernels.
std::shared_ptr<NativeOp> define_op(const OpPlans& plans) {
  const OpName name = split_op_name(plans.qualname);
  new_library(torch::Library::FRAGMENT, name.ns, std::nullopt).def((name.name + plans.schema).c_str());
  auto op = std::make_shared<NativeOp>(plans.qualname, plans.schema, plans.arg_kinds, plans.num_returns,
                                       std::make_shared<BundleTracer>());
  register_native_op(op, "CUDA");
  register_autograd_kernels(plans.qualname, op->written_args(), std::make_shared<RefusedDifferentiableCall>(plans.qualname, "loaded from a bundle"));
  return op;
}

// The file's bytes (C stdio: no iostreams in this library, see csrc/runtime/tensor_map.cpp).
std::string read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) fail(ErrorKind::Value, "torch_tile::load_bundle: cannot open '" + path + "'");
  std::string bytes;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) bytes.append(buffer, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) fail(ErrorKind::Value, "torch_tile::load_bundle: cannot read '" + path + "'");
  return bytes;
}

LoadedBundle load(const std::string& bytes) {
  const Bundle bundle = deserialize_bundle(bytes);
  std::lock_guard<std::mutex> lock(load_mutex());
  LoadedBundle loaded;
  loaded.producer = bundle.producer;
  auto resolve = [&](const KernelRef& ref) {
    // A process with the frontend's compiler (Python) keeps it; one without gets the bundle's variants only.
    register_frontend_if_absent(ref.frontend, std::make_shared<BundleOnlyCompiler>(ref.frontend));
    return kernel_cache_for(ref.id, ref.name, ref.frontend);
  };
  std::vector<OpPlans> ops;
  for (const std::string& data : bundle.ops) ops.push_back(deserialize_plans(data, resolve));
  for (const BundledVariant& v : bundle.variants) add_bundled_variant(v);
  for (const OpPlans& plans : ops) {
    std::shared_ptr<NativeOp> op = find_native_op(plans.qualname);
    if (!op) op = define_op(plans);
    loaded.plans += op->install_plans(plans);
    loaded.ops.push_back(plans.qualname);
  }
  loaded.variants = int64_t(bundle.variants.size());
  return loaded;
}

}  // namespace

LoadedBundle load_bundle_bytes(const std::string& bytes) {
  return translating_errors([&] { return load(bytes); });
}

LoadedBundle load_bundle(const std::string& path) {
  return translating_errors([&] {
    const std::string bytes = read_file(path);
    try {
      return load(bytes);
    } catch (const Error& e) {
      fail(e.kind(), "torch_tile::load_bundle('" + path + "'): " + e.what());
    }
  });
}

const char* version() { return TORCH_TILE_VERSION; }

}  // namespace torch_tile
