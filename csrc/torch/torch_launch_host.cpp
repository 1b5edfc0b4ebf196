#include "torch_launch_host.h"

#include <ATen/EmptyTensor.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "../runtime/error.h"
#include "dtype_map.h"

namespace torch_tile {

TensorArg view_of(const at::Tensor& t, const DLDataType& dtype) {
  TensorArg a{};
  a.data = const_cast<void*>(t.const_data_ptr());
  a.sizes = t.sizes().data();
  a.strides = t.strides().data();
  a.ndim = int32_t(t.dim());
  a.dtype = dtype;
  a.device = DLDevice{kDLCUDA, t.device().index()};
  return a;
}

TorchLaunchHost::TorchLaunchHost(const CallArgs& args, const c10::IValue* inputs, c10::Device device)
    : args_(args), inputs_(inputs), device_(device), first_output_(args.num_args),
      allocator_(c10::GetAllocator(c10::DeviceType::CUDA)) {}

TensorArg TorchLaunchHost::allocate(int slot, const AllocStep& step, const int64_t* shape, int rank) {
  const DLDataType dl = unpack_dtype(step.dtype);
  const c10::ScalarType dtype = to_scalar_type(dl);
  const c10::DispatchKeySet keys(c10::DispatchKey::CUDA);
  at::Tensor t;
  if (step.kind == AllocStep::Kind::EmptyLike) {
    // empty_like's preserve_format: keep a dense source's strides, else contiguous.
    const TensorArg& src = args_.slots[step.like_slot];
    const c10::IntArrayRef sizes(src.sizes, size_t(src.ndim));
    const c10::IntArrayRef strides(src.strides, size_t(src.ndim));
    const at::Tensor& like = step.like_slot >= first_output_ ? output(step.like_slot)
                                                              : inputs_[step.like_slot].toTensor();
    t = like.is_non_overlapping_and_dense() ? at::detail::empty_strided_generic(sizes, strides, allocator_, keys, dtype)
              : at::detail::empty_generic(sizes, allocator_, keys, dtype, std::nullopt);
  } else {
    t = at::detail::empty_generic(c10::IntArrayRef(shape, size_t(rank)), allocator_, keys, dtype,
                                  std::nullopt);
  }
  if (step.zero) t.zero_();
  if (slot != first_output_ + int(outputs_.size())) fail(ErrorKind::Runtime, "outputs allocated out of order");
  outputs_.push_back(std::move(t));
  return view_of(outputs_.back(), dl);
}

void* TorchLaunchHost::scratch(size_t bytes, size_t alignment) {
  // The caching allocator hands out 512-byte aligned blocks.
  if (alignment > 512 || (alignment & (alignment - 1)) != 0) {
    fail(ErrorKind::NotImplemented, "kernel asks for scratch memory aligned to " +
                                        std::to_string(alignment) + " bytes; at most 512 is supported");
  }
  scratch_.push_back(allocator_->allocate(bytes));
  return scratch_.back().get();
}

cu::CUstream TorchLaunchHost::stream() {
  const c10::impl::DeviceGuardImplInterface* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  return static_cast<cu::CUstream>(impl->getStreamNativeHandle(impl->getStream(device_)));
}

}  // namespace torch_tile
