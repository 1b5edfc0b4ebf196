#include "bundle_bindings.h"

#include <pybind11/stl.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include <map>
#include <set>
#include <tuple>

#include <torch_tile/torch_tile.h>

#include "runtime/kernels/bundle.h"
#include "runtime/kernels/bundled_variants.h"
#include "runtime/kernels/kernel_registry.h"
#include "../torch/error_translation.h"
#include "../torch/native_op.h"
#include "../torch/op_library.h"
#include "interpreter_exit.h"
#include "op_named.h"
#include "plan_bindings.h"

namespace py = pybind11;

namespace torch_tile {
namespace {

BundledVariant bundled(const KernelCache& kernel, int capability, std::vector<uint64_t> key, KernelBinary binary) {
  BundledVariant v;
  v.kernel = KernelRef{kernel.id(), kernel.name(), kernel.frontend()};
  v.capability = capability;
  v.key = std::move(key);
  v.binary = std::move(binary);
  return v;
}

// The ops' signatures and plans, and the kernels those plans launch (by id).
std::pair<std::vector<OpPlans>, std::map<int64_t, std::shared_ptr<KernelCache>>> ops_and_kernels(
    const std::vector<std::string>& qualnames) {
  std::pair<std::vector<OpPlans>, std::map<int64_t, std::shared_ptr<KernelCache>>> out;
  for (const std::string& q : qualnames) {
    out.first.push_back(op_named(q)->export_plans());
    for (const LaunchPlan& p : out.first.back().plans) {
      for (const LaunchStep& l : p.launches) out.second.emplace(l.kernel->id(), l.kernel);
    }
  }
  return out;
}

// The ops' plans and their kernels' compiled variants, and `precompile`:
// (kernel id, key words, capability) compiled here through the kernel's
// frontend (or taken from a loaded bundle), for any architecture.
py::bytes export_bundle(const std::vector<std::string>& qualnames,
                        const std::vector<std::tuple<int64_t, std::vector<uint64_t>, int>>& precompile,
                        const std::string& producer) {
  Bundle bundle;
  bundle.producer = producer;
  std::set<std::tuple<int64_t, int, std::vector<uint64_t>>> seen;
  auto add = [&](BundledVariant v) {
    if (seen.emplace(v.kernel.id, v.capability, v.key).second) bundle.variants.push_back(std::move(v));
  };
  return translating_errors([&] {
    const auto [ops, kernels] = ops_and_kernels(qualnames);
    for (const OpPlans& op : ops) bundle.ops.push_back(serialize_plans(op));
    for (const auto& [id, kernel] : kernels) {
      for (KernelCache::Variant& v : kernel->variants()) add(bundled(*kernel, v.capability, v.key, std::move(v.binary)));
    }
    for (const auto& [kid, words, capability] : precompile) {
      if (seen.count({kid, capability, words})) continue;
      const std::shared_ptr<KernelCache> kernel = find_kernel_cache(kid);
      if (!kernel) fail(ErrorKind::Value, "export_bundle: kernel id " + std::to_string(kid) + " is not registered");
      add(bundled(*kernel, capability, words, kernel->compile(key_of_words(words, kernel->name()), capability)));
    }
    return py::bytes(serialize_bundle(bundle));
  });
}

// (kernel id, key words, capability) of the variants the ops' kernels compiled in this process.
py::list compiled_variants(const std::vector<std::string>& qualnames) {
  py::list out;
  for (const auto& [id, kernel] : ops_and_kernels(qualnames).second) {
    for (const KernelCache::Variant& v : kernel->variants()) out.append(py::make_tuple(id, v.key, v.capability));
  }
  return out;
}

py::dict binary_summary(const KernelBinary& b) {
  py::dict d;
  d["name"] = b.name;
  d["cubin_bytes"] = b.cubin.size();
  d["block"] = py::make_tuple(b.block[0], b.block[1], b.block[2]);
  d["num_ctas"] = b.num_ctas;
  d["shared"] = b.shared_mem;
  d["runtime_params"] = b.runtime_params.size();
  d["tensor_maps"] = b.tensor_maps.size();
  return d;
}

// The bundle's contents without registering anything: its plans name
// kernels through detached caches, so no kernel needs to be known here.
py::dict read_bundle(const py::bytes& data) {
  return translating_errors([&] {
    const Bundle bundle = deserialize_bundle(std::string(data));
    py::dict out;
    out["producer"] = bundle.producer;
    py::list ops;
    for (const std::string& bytes : bundle.ops) {
      ops.append(op_plans_to_python(deserialize_plans(bytes, [](const KernelRef& ref) {
        return std::make_shared<KernelCache>(ref.id, ref.name, ref.frontend, nullptr);
      })));
    }
    out["ops"] = ops;
    py::list variants;
    for (const BundledVariant& v : bundle.variants) {
      py::dict d;
      d["kernel_id"] = v.kernel.id;
      d["kernel"] = v.kernel.name;
      d["frontend"] = v.kernel.frontend;
      d["capability"] = v.capability;
      d["key"] = v.key;
      d["binary"] = binary_summary(v.binary);
      variants.append(d);
    }
    out["variants"] = variants;
    return out;
  });
}

// What `load` registered, loaded with the GIL released: loading takes ops' trace mutexes, which a thread
// tracing holds while it waits for the GIL.
template <class Load>
py::dict loaded_without_gil(Load load) {
  LoadedBundle b;
  {
    GilRelease no_gil;
    b = load();
  }
  py::dict d;
  d["producer"] = b.producer;
  d["ops"] = b.ops;
  d["plans"] = b.plans;
  d["variants"] = b.variants;
  return d;
}

// (kernel id, key words) of each launch a call with these arguments makes.
py::list variant_keys(const std::string& qualname, const py::tuple& args, const py::dict& kwargs) {
  const std::shared_ptr<NativeOp> op = op_named(qualname);
  const c10::OperatorHandle handle = defined_op(qualname);
  torch::jit::Stack stack = torch::jit::createStackForSchema(handle.schema(), args, kwargs, std::nullopt);
  std::vector<std::pair<std::shared_ptr<KernelCache>, std::vector<uint64_t>>> keys;
  {
    // A miss takes the op's trace mutex; its holder may be waiting for the GIL (the tracer takes it back).
    GilRelease no_gil;
    keys = op->variant_keys(stack);
  }
  py::list out;
  for (const auto& [kernel, key] : keys) out.append(py::make_tuple(kernel->id(), key));
  return out;
}

}  // namespace

void bind_bundles(py::module_& m) {
  m.def("export_bundle", &export_bundle, py::arg("qualnames"), py::arg("precompile"), py::arg("producer"),
        "A bundle's bytes: the ops' plans and their kernels' variants (see torch_tile.bundle).");
  m.def("compiled_variants", &compiled_variants, py::arg("qualnames"),
        "(kernel id, key words, capability) of the variants the ops' kernels compiled in this process.");
  m.def("read_bundle", &read_bundle, py::arg("data"),
        "A bundle's contents (ValueError if corrupt, truncated or of another version); registers nothing.");
  m.def("load_bundle", [](const std::string& path) { return loaded_without_gil([&] { return load_bundle(path); }); },
        py::arg("path"), "torch_tile::load_bundle: registers the bundle's ops and variants in this process.");
  m.def("load_bundle_bytes",
        [](const std::string& data) { return loaded_without_gil([&] { return load_bundle_bytes(data); }); },
        py::arg("data"), "torch_tile::load_bundle_bytes.");
  m.def("variant_keys", &variant_keys, py::arg("qualname"), py::arg("args"), py::arg("kwargs"),
        "(kernel id, key words) of each launch a call with these arguments (CPU tensors allowed) makes.");
}

}  // namespace torch_tile
