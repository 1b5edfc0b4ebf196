#include "tensor_map_probe.h"

#include <pybind11/stl.h>

#include "runtime/error.h"
#include "runtime/cuda/tensor_map.h"
#include "../torch/error_translation.h"
#include "../python/binary_from_python.h"

namespace py = pybind11;

namespace torch_tile {
namespace {

const std::string kKernel = "<probe>";
const std::string kSite = "<probe>";

TensorMapRequest request_from(uintptr_t base, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                              int elem_size, bool nan_padding, bool round_tf32) {
  if (shape.empty() || shape.size() > size_t(kMaxTensorMapRank) || strides.size() != shape.size()) {
    throw py::value_error("tensor map probe: shape and strides must have the same rank, 1 to 5");
  }
  TensorMapRequest r;
  r.base = reinterpret_cast<void*>(base);
  r.rank = int32_t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    r.shape[i] = shape[i];
    r.strides[i] = strides[i];
  }
  r.elem_size = elem_size;
  r.nan_padding = nan_padding;
  r.round_tf32 = round_tf32;
  return r;
}

template <class T>
std::vector<T> first(const T* values, uint32_t n) {
  return std::vector<T>(values, values + n);
}

py::dict encoding_dict(const TensorMapEncoding& e) {
  py::dict d;
  d["data_type"] = e.data_type;
  d["rank"] = e.rank;
  d["global_address"] = reinterpret_cast<uintptr_t>(e.global_address);
  d["global_dim"] = first(e.global_dim, e.rank);
  d["global_strides"] = first(e.global_strides, e.rank - 1);
  d["box_dim"] = first(e.box_dim, e.rank);
  d["element_strides"] = first(e.element_strides, e.rank);
  d["interleave"] = e.interleave;
  d["swizzle"] = e.swizzle;
  d["l2_promotion"] = e.l2_promotion;
  d["oob_fill"] = e.oob_fill;
  return d;
}

}  // namespace

void bind_tensor_map_probe(py::module_& m) {
  auto encode = [](const py::dict& meta, uintptr_t base, const std::vector<int64_t>& shape,
                   const std::vector<int64_t>& strides, int elem_size, bool nan_padding, bool round_tf32,
                   const std::string& param) {
    try {
      const TensorMapSite site{"tensor map probe", kKernel, param, kSite};
      return tensor_map_encoding(tensor_map_from_python(meta),
                                 request_from(base, shape, strides, elem_size, nan_padding, round_tf32), site);
    } catch (const Error& e) {
      rethrow_as_torch_error(e);
    }
  };
  m.def("tensor_map_encoding",
        [encode](const py::dict& meta, uintptr_t base, const std::vector<int64_t>& shape,
                 const std::vector<int64_t>& strides, int elem_size, bool nan_padding, bool round_tf32,
                 const std::string& param) {
          return encoding_dict(encode(meta, base, shape, strides, elem_size, nan_padding, round_tf32, param));
        },
        py::arg("meta"), py::arg("base"), py::arg("shape"), py::arg("strides"), py::arg("elem_size"),
        py::arg("nan_padding") = false, py::arg("round_tf32") = false, py::arg("param") = "desc",
        "The cuTensorMapEncodeTiled arguments the launch path computes for a descriptor (meta: Triton's "
        "tensordesc metadata with the host dtype enum), or the ValueError it raises.");
  m.def("cached_tensor_map",
        [encode](const py::dict& meta, uintptr_t base, const std::vector<int64_t>& shape,
                 const std::vector<int64_t>& strides, int elem_size, bool nan_padding, bool round_tf32,
                 const std::string& param) {
          const TensorMapEncoding e = encode(meta, base, shape, strides, elem_size, nan_padding, round_tf32, param);
          try {
            const TensorMapSite site{"tensor map probe", kKernel, param, kSite};
            const cu::CUtensorMap& map = cached_tensor_map(e, site);
            return py::bytes(reinterpret_cast<const char*>(&map), sizeof(map));
          } catch (const Error& err) {
            rethrow_as_torch_error(err);
          }
        },
        py::arg("meta"), py::arg("base"), py::arg("shape"), py::arg("strides"), py::arg("elem_size"),
        py::arg("nan_padding") = false, py::arg("round_tf32") = false, py::arg("param") = "desc",
        "The encoded 128-byte map, through this thread's cache (counters()['tensor_map_encodes'] counts misses).");
  m.def("use_fake_tensor_map_encoder", &use_fake_tensor_map_encoder, py::arg("fake"),
        "Tests: encode tensor maps with a fake driver (no GPU needed) instead of cuTensorMapEncodeTiled.");
}

}  // namespace torch_tile
