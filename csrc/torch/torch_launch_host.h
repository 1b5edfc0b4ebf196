// LaunchHost for PyTorch: outputs from the CUDA caching allocator (no
// dispatcher round trip), scratch memory likewise, the current torch stream.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/Allocator.h>
#include <c10/util/SmallVector.h>

#include "../runtime/plan_executor.h"

namespace torch_tile {

class TorchLaunchHost final : public LaunchHost {
 public:
  // `inputs` are the op's arguments on the dispatcher stack.
  TorchLaunchHost(const CallArgs& args, const c10::IValue* inputs, c10::Device device);

  TensorArg allocate(int slot, const AllocStep& step, const int64_t* shape, int rank) override;
  void* scratch(size_t bytes, size_t alignment) override;
  cu::CUstream stream() override;

  // Allocated outputs by slot (from the first output slot on).
  at::Tensor& output(int slot) { return outputs_[size_t(slot - first_output_)]; }

 private:
  const c10::IValue* inputs_;
  const c10::Device device_;
  const int first_output_;
  c10::Allocator* allocator_;
  c10::SmallVector<at::Tensor, 4> outputs_;
  c10::SmallVector<c10::DataPtr, 1> scratch_;
};

// Fills a TensorArg from a tensor's metadata (no copy, no allocation).
TensorArg view_of(const at::Tensor& t, const DLDataType& dtype);

}  // namespace torch_tile
