#include "torch_launch_host.h"

#include <cstring>

#include <ATen/core/grad_mode.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/TensorOptions.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "runtime/error.h"
#include "aten_step.h"
#include "dtype_map.h"
#include "output_allocation.h"
#include "plan_constant.h"

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
    : args_(args), inputs_(inputs), device_(device), first_made_(args.num_slots),
      allocator_(c10::GetAllocator(device.type())), keys_(c10::computeDispatchKey(std::nullopt, std::nullopt, device)) {}

TorchLaunchHost::Made& TorchLaunchHost::made(int slot) {
  const size_t i = size_t(slot - first_made_);
  if (slot < first_made_ || i > made_.size()) fail(ErrorKind::Runtime, "plan tensors made out of order");
  if (i == made_.size()) made_.emplace_back();
  return made_[i];
}

const at::Tensor& TorchLaunchHost::input(int slot) const {
  if (slot < args_.num_args) return inputs_[slot].toTensor();
  // An item of a Tensor[] argument: list_start/list_len say which argument holds the slot.
  for (int i = 0; i < args_.num_args; ++i) {
    if (inputs_[i].isTensorList() && slot >= args_.list_start[i] && slot < args_.list_start[i] + args_.list_len[i]) {
      return inputs_[i].toListRef()[size_t(slot - args_.list_start[i])].toTensor();
    }
  }
  fail(ErrorKind::Runtime, "plan slot " + std::to_string(slot) + " is no input tensor");
}

const at::Tensor& TorchLaunchHost::tensor(int slot) {
  if (slot < first_made_) return input(slot);
  Made& m = made(slot);
  if (!m.tensor.defined()) {
    if (m.view_base < 0) fail(ErrorKind::Runtime, "plan slot " + std::to_string(slot) + " holds no tensor");
    const at::Tensor& base = tensor(m.view_base);
    const TensorArg& a = args_.slots[slot];
    // Views of the op's own intermediates: no autograd bookkeeping.
    c10::impl::ExcludeDispatchKeyGuard below_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    const c10::ScalarType dtype = to_scalar_type(unpack_dtype(m.view_dtype));
    // The base as the view's element type (its storage offset in those elements), as torch reinterprets it:
    // a complex tensor's real view (any strides), else torch's own dtype view.
    const at::Tensor typed = base.scalar_type() == dtype ? base
                             : base.is_complex() && dtype == c10::toRealValueType(base.scalar_type()) ? at::view_as_real(base)
                                                                                                      : base.view(dtype);
    m.tensor = typed.as_strided(c10::IntArrayRef(a.sizes, size_t(a.ndim)), c10::IntArrayRef(a.strides, size_t(a.ndim)),
                                typed.storage_offset() + m.view_offset);
  }
  return m.tensor;
}

int TorchLaunchHost::memory_of(int slot) {
  while (slot >= first_made_ && made(slot).view_base >= 0) slot = made(slot).view_base;
  return slot;
}

at::Tensor TorchLaunchHost::take(int slot) {
  tensor(slot);
  return std::move(made(slot).tensor);
}

TensorArg TorchLaunchHost::allocate(int slot, const AllocStep& step, const int64_t* shape, int rank) {
  const at::Tensor* like = step.kind == AllocStep::Kind::EmptyLike ? &tensor(step.like_slot) : nullptr;
  at::Tensor t = allocate_output(step, shape, rank, like, allocator_, keys_);
  Made& m = made(slot);
  m.tensor = std::move(t);
  return view_of(m.tensor, unpack_dtype(step.dtype));
}

void TorchLaunchHost::add_view(int slot, const ViewStep& step, int64_t offset) {
  Made& m = made(slot);
  m.view_base = step.base;
  m.view_offset = offset;
  m.view_dtype = step.dtype;
}

void TorchLaunchHost::run_aten(const AtenStep& step, CallArgs& args, int first_slot) {
  c10::SmallVector<at::Tensor, 2> results;
  run_aten_step(step, args, [this](int slot) -> const at::Tensor& { return tensor(slot); }, device_, results);
  for (int i = 0; i < step.num_outputs; ++i) {
    Made& m = made(first_slot + i);
    m.tensor = std::move(results[size_t(i)]);
    args.slots[first_slot + i] = view_of(m.tensor, dl_dtype_of(m.tensor));
  }
}

void TorchLaunchHost::take_constants(const std::vector<ConstantStep>& constants) {
  constants_.clear();
  for (const ConstantStep& c : constants) {
    at::Tensor t = constant_tensor(c);
    if (!t.defined() || t.device() != device_) throw ConstantChanged(c, t.defined());
    constants_.push_back(std::move(t));
  }
}

TensorArg TorchLaunchHost::constant(int slot, int index) {
  Made& m = made(slot);
  m.tensor = std::move(constants_[size_t(index)]);  // each constant is one step of the plan
  return view_of(m.tensor, dl_dtype_of(m.tensor));
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

void TorchLaunchHost::read_values(int slot, const ReadStep& step, int64_t* out) {
  const at::Tensor& t = tensor(slot);
  if (t.numel() != step.count || t.is_floating_point() || t.is_complex()) {
    fail(ErrorKind::Value, "values read from the data (at " + step.site + ") need " + std::to_string(step.count) +
                               " integer or bool element(s); got " + std::to_string(t.numel()) + " of " +
                               std::string(c10::toString(t.scalar_type())));
  }
  if (step.count == 1) {
    // torch's own read (aten::_local_scalar_dense): the current stream, synchronized; under CUDA-graph capture it
    // raises torch's error for `.item()` there.
    out[0] = t.item().toLong();
    return;
  }
  // One blocking copy to the host, as `.tolist()` makes (the same error under capture), then the values there.
  const at::Tensor host = t.to(at::TensorOptions().device(c10::kCPU).dtype(c10::kLong)).contiguous();
  std::memcpy(out, host.data_ptr<int64_t>(), sizeof(int64_t) * size_t(step.count));
}

cu::CUstream TorchLaunchHost::stream() {
  const c10::impl::DeviceGuardImplInterface* impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  return static_cast<cu::CUstream>(impl->getStreamNativeHandle(impl->getStream(device_)));
}

}  // namespace torch_tile
