#include "torch_launch_host.h"

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "../runtime/error.h"
#include "output_allocation.h"

namespace torch_tile {

TensorArg view_of(const at::Tensor& t, const DLDataType& dtype) {
  TensorArg a{};
  a.data = const_cast<void*>(t.const_data_ptr());
  a.sizes = t.sizes().data();
  a.strides = t.strides().data();
  a.ndim = int32_t(t.dim());
  a.dtype = dtype;
  return a;
}

TorchLaunchHost::TorchLaunchHost(const CallArgs& args, const c10::IValue* inputs, c10::Device device)
    : inputs_(inputs), device_(device), first_output_(args.num_args),
      allocator_(c10::GetAllocator(c10::DeviceType::CUDA)) {}

TensorArg TorchLaunchHost::allocate(int slot, const AllocStep& step, const int64_t* shape, int rank) {
  if (slot != first_output_ + int(outputs_.size())) fail(ErrorKind::Runtime, "outputs allocated out of order");
  const at::Tensor* like = nullptr;
  if (step.kind == AllocStep::Kind::EmptyLike) {
    like = step.like_slot >= first_output_ ? &output(step.like_slot) : &inputs_[step.like_slot].toTensor();
  }
  outputs_.push_back(allocate_output(step, shape, rank, like, allocator_, c10::DispatchKeySet(c10::DispatchKey::CUDA)));
  return view_of(outputs_.back(), unpack_dtype(step.dtype));
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
