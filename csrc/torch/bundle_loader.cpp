// torch_tile::load_bundle (csrc/include/torch_tile/torch_tile.h): a bundle's
// ops registered with the dispatcher from C++, with no Python. An op the
// process does not have is defined from its schema and gets the native CUDA
// kernel, the autograd kernels (calls needing a gradient are refused: the
// backward lives in Python) and a tracer that explains a miss instead of
// tracing; an op it has (defined from Python) only gets the plans.
#include <torch_tile/torch_tile.h>

#include "runtime/kernels/bundle.h"
#include "runtime/plan/byte_io.h"
#include "runtime/kernels/bundled_variants.h"
#include "runtime/fork_safe_mutex.h"
#include "runtime/kernels/kernel_registry.h"
#include "runtime/plan/plan_set.h"
#include "aten_step.h"
#include "error_translation.h"
#include "native_op.h"

#ifndef TORCH_TILE_VERSION
#error "TORCH_TILE_VERSION is defined by setup.py from torch_tile/_version.py"
#endif

namespace torch_tile {
namespace {

// A miss in a process that cannot trace: says which guard each plan fails.
class BundleTracer final : public PlanTracer {
 public:
  std::unique_ptr<LaunchPlan> trace(NativeOp& op, const CallArgs& args, const torch::jit::Stack&, size_t,
                                    bool) override {
    std::string why;
    const int n = op.plans().size();
    for (int i = 0; i < n && i < 4; ++i) why += "\n  plan " + std::to_string(i) + ": " + plan_mismatch(op.plans().at(i), args);
    fail(ErrorKind::Value, op.qualname() + ": no plan of the loaded bundles covers this call" +
                               (n == 0 ? std::string(" (the bundle has no plans for this op)") : ":" + why) +
                               "\nExport the bundle from a process that made this call (new dtypes, ranks, list "
                               "lengths or branches on sizes need their own plan).");
  }
};

ForkSafeMutex& load_mutex() {  // held while plans are installed, which waits for ops' trace mutexes
  static ForkSafeMutex* m = new ForkSafeMutex();
  return *m;
}

LoadedBundle load(const std::string& bytes) {
  const Bundle bundle = deserialize_bundle(bytes);
  std::lock_guard<ForkSafeMutex> lock(load_mutex());
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
    if (!op) {
      op = define_native_op(plans.qualname, plans.schema, plans.arg_kinds, plans.num_returns,
                            std::make_shared<BundleTracer>(), "loaded from a bundle");
      register_native_meta(op);  // meta tensors, FakeTensor, torch.compile: the plans' shapes, evaluated natively
    }
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
    const std::string bytes = read_file(path, "torch_tile::load_bundle");
    try {
      return load(bytes);
    } catch (const Error& e) {
      fail(e.kind(), "torch_tile::load_bundle('" + path + "'): " + e.what());
    }
  });
}

const char* version() { return TORCH_TILE_VERSION; }

}  // namespace torch_tile
