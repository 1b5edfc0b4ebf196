// torch_tile::tensor_of_ints: `torch.tensor(values, dtype=, device=)` of host
// integers as an ATen operator, so that a launch plan can replay it as an ATen
// step whose values are plan expressions (sizes, int arguments, constants).
// Op bodies build such tensors for their kernels (offset tables, shapes,
// placeholders like `torch.tensor([[]])`); eager torch fills a CPU tensor and
// copies it to the device, and so does this, on the current stream.
#include <ATen/ATen.h>
#include <torch/library.h>

namespace torch_tile {
namespace {

at::Tensor tensor_of_ints(c10::IntArrayRef values, c10::IntArrayRef size, c10::ScalarType dtype, c10::Device device) {
  const int64_t numel = c10::multiply_integers(size);
  TORCH_CHECK_VALUE(numel == int64_t(values.size()), "torch_tile::tensor_of_ints: ", values.size(),
                    " values for a tensor of size ", size);
  at::Tensor host = at::empty(size, at::TensorOptions().dtype(at::kLong));
  std::copy(values.begin(), values.end(), host.data_ptr<int64_t>());
  return host.to(at::TensorOptions().dtype(dtype).device(device));
}

at::Tensor tensor_of_ints_meta(c10::SymIntArrayRef, c10::SymIntArrayRef size, c10::ScalarType dtype, c10::Device) {
  return at::empty_symint(size, at::TensorOptions().dtype(dtype).device(c10::kMeta));
}

}  // namespace

TORCH_LIBRARY_FRAGMENT(torch_tile, m) {
  m.def("tensor_of_ints(SymInt[] values, SymInt[] size, ScalarType dtype, Device device) -> Tensor");
}

TORCH_LIBRARY_IMPL(torch_tile, CompositeExplicitAutograd, m) {
  m.impl("tensor_of_ints", tensor_of_ints);
}

TORCH_LIBRARY_IMPL(torch_tile, Meta, m) {
  m.impl("tensor_of_ints", tensor_of_ints_meta);
}

}  // namespace torch_tile
