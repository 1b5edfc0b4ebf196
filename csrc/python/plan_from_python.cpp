#include "plan_from_python.h"

#include <pybind11/stl.h>
#include <torch/csrc/Dtype.h>

#include <algorithm>

#include "../runtime/error.h"
#include "../torch/dtype_map.h"
#include "../runtime/kernel_registry.h"

namespace py = pybind11;

namespace torch_tile {
namespace {

uint32_t dtype_from_python(const py::handle& obj) {
  if (!THPDtype_Check(obj.ptr())) fail(ErrorKind::Type, "plan: expected a torch.dtype");
  DLDataType dl{};
  const c10::ScalarType st = reinterpret_cast<THPDtype*>(obj.ptr())->scalar_type;
  if (!to_dl_dtype(st, &dl)) {
    fail(ErrorKind::Type, std::string("torch_tile cannot pass dtype ") + c10::toString(st) + " to a kernel");
  }
  return pack_dtype(dl);
}

ParamType param_type_from_string(const std::string& t) {
  if (!t.empty() && t[0] == '*') return ParamType::Pointer;
  static const std::pair<const char*, ParamType> table[] = {
      {"i1", ParamType::I8},   {"i8", ParamType::I8},   {"i16", ParamType::I16}, {"i32", ParamType::I32},
      {"i64", ParamType::I64}, {"u1", ParamType::U8},   {"u8", ParamType::U8},   {"u16", ParamType::U16},
      {"u32", ParamType::U32}, {"u64", ParamType::U64}, {"fp32", ParamType::F32}, {"f32", ParamType::F32},
      {"fp64", ParamType::F64}, {"nvTmaDesc", ParamType::TensorMap}};
  for (const auto& [name, type] : table) {
    if (t == name) return type;
  }
  fail(ErrorKind::NotImplemented, "torch_tile cannot pass a kernel parameter of type " + t +
                                      " (supported: pointers, integers, fp32, fp64, tensor descriptors)");
}

DescriptorBinding descriptor_from_python(const py::handle& obj) {
  // (shape exprs, stride exprs, nan padding, round to tf32, parameter name)
  const py::tuple t = py::reinterpret_borrow<py::tuple>(obj);
  DescriptorBinding d;
  for (const py::handle& e : t[0]) d.shape.push_back(expr_from_python(e));
  for (const py::handle& e : t[1]) d.strides.push_back(expr_from_python(e));
  d.nan_padding = t[2].cast<bool>();
  d.round_tf32 = t[3].cast<bool>();
  d.name = t[4].cast<std::string>();
  return d;
}

}  // namespace

TensorMapMeta tensor_map_from_python(const py::handle& obj) {
  const py::dict m = py::reinterpret_borrow<py::dict>(obj);
  TensorMapMeta meta;
  const auto box = m["block_size"].cast<std::vector<int64_t>>();
  if (box.empty() || box.size() > size_t(kMaxTensorMapRank)) {
    fail(ErrorKind::NotImplemented, "tensor descriptor of rank " + std::to_string(box.size()) + " (TMA: 1 to 5)");
  }
  meta.rank = int32_t(box.size());
  for (size_t i = 0; i < box.size(); ++i) meta.box[i] = uint32_t(box[i]);
  meta.elem_type = m["elem_type"].cast<int32_t>();
  meta.elem_size = m["elem_size"].cast<int32_t>();
  meta.swizzle = m["swizzle"].cast<int32_t>();
  return meta;
}

Expr expr_from_python(const py::handle& code_and_text) {
  const py::tuple t = py::reinterpret_borrow<py::tuple>(code_and_text);
  Expr e;
  e.code = t[0].cast<std::vector<int64_t>>();
  e.text = t[1].cast<std::string>();
  e.validate();
  return e;
}

std::unique_ptr<LaunchPlan> plan_from_python(const py::dict& d) {
  auto plan = std::make_unique<LaunchPlan>();
  for (const py::handle& g : d["tensor_guards"]) {
    const py::tuple t = py::reinterpret_borrow<py::tuple>(g);
    plan->tensor_guards.push_back(TensorGuard{t[0].cast<int32_t>(), dtype_from_python(t[1]), t[2].cast<int32_t>()});
  }
  for (const py::handle& g : d["guards"]) plan->guards.push_back(expr_from_python(g));
  for (const py::handle& a : d["allocs"]) {
    const py::dict ad = py::reinterpret_borrow<py::dict>(a);
    AllocStep step;
    step.kind = AllocStep::Kind(ad["kind"].cast<int32_t>());
    for (const py::handle& e : ad["shape"]) step.shape.push_back(expr_from_python(e));
    step.like_slot = ad["like"].cast<int32_t>();
    step.dtype = dtype_from_python(ad["dtype"]);
    step.zero = ad["zero"].cast<bool>();
    plan->allocs.push_back(std::move(step));
  }
  for (const py::handle& l : d["launches"]) {
    const py::dict ld = py::reinterpret_borrow<py::dict>(l);
    LaunchStep step;
    step.kernel = find_kernel_cache(ld["kernel"].cast<int64_t>());
    if (!step.kernel) fail(ErrorKind::Runtime, "plan names an unregistered kernel");
    step.config_id = ld["config"].cast<int64_t>();
    step.site = ld["site"].cast<std::string>();
    const py::list grid = ld["grid"];
    if (grid.size() != 3) fail(ErrorKind::Runtime, "plan grid must have 3 expressions");
    for (int i = 0; i < 3; ++i) step.grid[i] = expr_from_python(grid[size_t(i)]);
    for (const py::handle& b : ld["bindings"]) {
      const py::tuple bt = py::reinterpret_borrow<py::tuple>(b);
      Binding binding;
      binding.kind = BindingKind(bt[0].cast<int32_t>());
      binding.slot = bt[1].cast<int32_t>();
      if (!bt[2].is_none()) binding.expr = expr_from_python(bt[2]);
      binding.float_value = bt[3].cast<double>();
      binding.specialize = bt[4].cast<bool>();
      binding.specialize_alignment = bt[5].cast<bool>();
      if (binding.kind == BindingKind::TensorDesc) binding.desc = descriptor_from_python(bt[6]);
      step.bindings.push_back(std::move(binding));
    }
    plan->launches.push_back(std::move(step));
  }
  plan->outputs = d["outputs"].cast<std::vector<int32_t>>();
  return plan;
}

KernelBinary binary_from_python(const py::dict& r) {
  KernelBinary b;
  b.name = r["name"].cast<std::string>();
  b.cubin = r["cubin"].cast<std::string>();
  b.num_warps = r["num_warps"].cast<int32_t>();
  b.num_ctas = r["num_ctas"].cast<int32_t>();
  b.shared_mem = r["shared"].cast<int32_t>();
  b.launch_pdl = r["launch_pdl"].cast<bool>();
  b.launch_cooperative_grid = r["launch_cooperative_grid"].cast<bool>();
  b.global_scratch_size = r["global_scratch_size"].cast<int64_t>();
  b.global_scratch_align = r["global_scratch_align"].cast<int64_t>();
  b.profile_scratch_size = r["profile_scratch_size"].cast<int64_t>();
  b.profile_scratch_align = r["profile_scratch_align"].cast<int64_t>();
  b.runtime_params = r["runtime_params"].cast<std::vector<int32_t>>();
  for (const std::string& t : r["runtime_param_types"].cast<std::vector<std::string>>()) {
    b.runtime_param_types.push_back(param_type_from_string(t));
  }
  b.runtime_param_parts = r["runtime_param_parts"].cast<std::vector<int8_t>>();
  for (const py::handle& m : r["tensor_maps"]) b.tensor_maps.push_back(tensor_map_from_python(m));
  const size_t n = b.runtime_params.size();
  if (b.runtime_param_types.size() != n || b.runtime_param_parts.size() != n) {
    fail(ErrorKind::Runtime, "compile result: runtime_params, runtime_param_types and runtime_param_parts differ "
                             "in length");
  }
  if (n > size_t(kMaxRuntimeParams) || b.tensor_maps.size() > size_t(kMaxTensorMaps)) {
    fail(ErrorKind::NotImplemented, "kernel " + b.name + " takes " + std::to_string(n) + " values and " +
                                        std::to_string(b.tensor_maps.size()) + " tensor descriptors; torch_tile " +
                                        "supports at most " + std::to_string(kMaxRuntimeParams) + " and " +
                                        std::to_string(kMaxTensorMaps));
  }
  // The launch path reads a descriptor's shape and strides from its map's
  // values: each component must follow the map of its own binding.
  size_t maps = 0;
  int32_t map_binding = -1, map_rank = 0;
  for (size_t j = 0; j < n; ++j) {
    if (b.runtime_param_types[j] == ParamType::TensorMap) {
      if (maps == b.tensor_maps.size()) break;
      map_binding = b.runtime_params[j];
      map_rank = b.tensor_maps[maps++].rank;
    } else if (b.runtime_param_parts[j] >= 0 &&
               (b.runtime_params[j] != map_binding || b.runtime_param_parts[j] >= 2 * map_rank)) {
      fail(ErrorKind::Runtime, "compile result: a descriptor's shape and strides must follow its map");
    }
  }
  if (size_t(std::count(b.runtime_param_types.begin(), b.runtime_param_types.end(), ParamType::TensorMap)) !=
      b.tensor_maps.size()) {
    fail(ErrorKind::Runtime, "compile result: one tensor_maps entry per nvTmaDesc parameter expected");
  }
  return b;
}

}  // namespace torch_tile
