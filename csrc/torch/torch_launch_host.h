// LaunchHost for PyTorch: outputs from the CUDA caching allocator (no
// dispatcher round trip), scratch memory likewise, ATen steps through the
// dispatcher, views as tensors only when one is needed, the current torch stream.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Allocator.h>
#include <c10/util/SmallVector.h>

#include "runtime/launch/plan_executor.h"

namespace torch_tile {

class TorchLaunchHost final : public LaunchHost {
 public:
  // `inputs` are the op's arguments on the dispatcher stack; `args` is the
  // call's as read from them, before any step ran (it outlives the host).
  TorchLaunchHost(const CallArgs& args, const c10::IValue* inputs, c10::Device device);

  TensorArg allocate(int slot, const AllocStep& step, const int64_t* shape, int rank) override;
  void add_view(int slot, const ViewStep& step, int64_t offset) override;
  void run_aten(const AtenStep& step, CallArgs& args, int first_slot) override;
  void read_values(int slot, const ReadStep& step, int64_t* out) override;
  // Takes (holds for the call) the tensors a plan holds; throws ConstantChanged where one is gone, or no longer of
  // the traced dtype, sizes and strides, or on another device than the call's.
  void take_constants(const std::vector<ConstantStep>& constants);
  TensorArg constant(int slot, int index) override;
  void* scratch(size_t bytes, size_t alignment) override;
  cu::CUstream stream() override;

  // The tensor in `slot` (an argument, or one the plan made; a view becomes a
  // tensor here, once).
  const at::Tensor& tensor(int slot);
  // Moves out the tensor the plan made in `slot`, to return it. Views among
  // the outputs must be tensors first (tensor()): a view reads its base.
  at::Tensor take(int slot);
  // The slot whose memory `slot` is: the base its views lead to (an argument's slot, or a tensor the plan made).
  int memory_of(int slot);
  // Whether `slot`'s memory is an argument's: the argument itself, or a view of one.
  bool aliases_input(int slot) { return memory_of(slot) < first_made_; }

 private:
  struct Made {
    at::Tensor tensor;        // undefined for a view not yet needed as a tensor
    int32_t view_base = -1;   // views: the base slot
    int64_t view_offset = 0;  // views: elements from the base's element 0
    uint32_t view_dtype = 0;
  };
  Made& made(int slot);
  // An input slot's tensor: an argument, or an item of a Tensor[] argument.
  const at::Tensor& input(int slot) const;

  const CallArgs& args_;
  const c10::IValue* inputs_;
  const c10::Device device_;
  const int first_made_;
  c10::Allocator* allocator_;   // the device's: CUDA, or CPU for a dry run (NativeOp::variant_keys)
  c10::DispatchKeySet keys_;
  c10::SmallVector<Made, 4> made_;
  c10::SmallVector<c10::DataPtr, 1> scratch_;
  c10::SmallVector<at::Tensor, 1> constants_;  // held for the call (take_constants)
};

// Fills a TensorArg from a tensor's metadata (no copy, no allocation).
TensorArg view_of(const at::Tensor& t, const DLDataType& dtype);

}  // namespace torch_tile
