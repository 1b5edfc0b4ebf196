#include "binary_from_python.h"

#include <pybind11/stl.h>

#include <algorithm>

#include "runtime/error.h"

namespace py = pybind11;

namespace torch_tile {
namespace {

// Triton's signature types the runtime can pass (a "*dtype" is a pointer).
constexpr std::pair<const char*, ParamType> kParamTypes[] = {
    {"i1", ParamType::I8},   {"i8", ParamType::I8},   {"i16", ParamType::I16}, {"i32", ParamType::I32},
    {"i64", ParamType::I64}, {"u1", ParamType::U8},   {"u8", ParamType::U8},   {"u16", ParamType::U16},
    {"u32", ParamType::U32}, {"u64", ParamType::U64}, {"fp32", ParamType::F32}, {"f32", ParamType::F32},
    {"fp64", ParamType::F64}, {"nvTmaDesc", ParamType::TensorMap}};

ParamType param_type_from_string(const std::string& t) {
  if (!t.empty() && t[0] == '*') return ParamType::Pointer;
  for (const auto& [name, type] : kParamTypes) {
    if (t == name) return type;
  }
  fail(ErrorKind::NotImplemented, "torch_tile cannot pass a kernel parameter of type " + t +
                                      " (supported: pointers, integers, fp32, fp64, tensor descriptors)");
}

}  // namespace

py::dict param_type_bytes_by_name() {
  py::dict d;
  for (const auto& [name, type] : kParamTypes) d[name] = param_type_bytes(type);
  d["*"] = param_type_bytes(ParamType::Pointer);
  return d;
}

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

KernelBinary binary_from_python(const py::dict& r) {
  KernelBinary b;
  b.name = r["name"].cast<std::string>();
  b.cubin = r["cubin"].cast<std::string>();
  // A block (x, y, z), or Triton's num_warps: (32 * num_warps, 1, 1).
  if (r.contains("block")) {
    const std::vector<int32_t> block = r["block"].cast<std::vector<int32_t>>();
    if (block.size() != 3) {
      throw py::value_error("launch metadata of kernel " + b.name + ": block must have 3 dimensions, got " +
                            std::to_string(block.size()));
    }
    for (int d = 0; d < 3; ++d) b.block[d] = block[size_t(d)];
  } else {
    b.block[0] = 32 * r["num_warps"].cast<int32_t>();
  }
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
  check_kernel_binary(b);
  return b;
}

}  // namespace torch_tile
