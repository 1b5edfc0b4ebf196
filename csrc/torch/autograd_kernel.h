// A tile op's Autograd and ADInplaceOrView kernels. A call that needs no
// gradient (grad mode off, or no tensor argument requires grad) goes straight
// below autograd in C++, so inference and LibTorch callers never leave C++.
// A call that needs one, on plain CUDA tensors, of an op with a registered
// backward whose plan has a native backward, gets a C++ autograd node
// (native_backward.h). Any other runs the op under its autograd.Function, which
// the host language supplies: the op's registered backward, or one that says
// the op has none.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <memory>
#include <string>
#include <vector>

namespace torch_tile {

// Runs an op under its autograd.Function: arguments on the stack in, results out.
class DifferentiableCall {
 public:
  virtual ~DifferentiableCall() = default;
  virtual void call(const c10::OperatorHandle& op, torch::jit::Stack& stack) = 0;
};

// The differentiable path of an op whose backward this process does not have
// (loaded from a bundle, defined in C++): a clear NotImplementedError naming
// the op, `why` ("loaded from a bundle"), and what to do instead.
class RefusedDifferentiableCall final : public DifferentiableCall {
 public:
  RefusedDifferentiableCall(std::string qualname, std::string why)
      : qualname_(std::move(qualname)), why_(std::move(why)) {}
  void call(const c10::OperatorHandle& op, torch::jit::Stack& stack) override;

 private:
  const std::string qualname_;
  const std::string why_;
};

// Registers both kernels for a defined op. `mutated_args` are the indices of
// the tensor arguments it writes (their version counters are bumped).
void register_autograd_kernels(const std::string& qualname, std::vector<int> mutated_args,
                               std::shared_ptr<DifferentiableCall> differentiable);

// Replaces the op's differentiable path when a backward is registered; from then on its plans'
// backward specs may take calls natively.
void set_differentiable_call(const std::string& qualname, std::shared_ptr<DifferentiableCall> differentiable);

}  // namespace torch_tile
