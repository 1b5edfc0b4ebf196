// What a launch plan holds of a tensor its body did not receive (ConstantStep::held): a weak reference, so that the
// module or library that owns the tensor still decides when it is freed, and a plan whose tensor was freed traces
// again instead of keeping stale state alive.
#pragma once

#include <ATen/core/Tensor.h>

#include <exception>
#include <memory>

#include "runtime/plan/launch_plan.h"

namespace torch_tile {

// Thrown where a call takes a plan's constants (TorchLaunchHost::take_constants, before any step of the plan runs)
// and one is gone, has another dtype, sizes or strides, or is on another device than the call's: the op traces the
// call again.
class ConstantChanged : public std::exception {
 public:
  explicit ConstantChanged(const ConstantStep& step) : step_(&step) {}
  const ConstantStep& step() const { return *step_; }
  const char* what() const noexcept override { return "a tensor a plan holds is no longer the one it traced"; }

 private:
  const ConstantStep* step_;
};

// A ConstantStep holding `t` as the plan's trace saw it (dtype, sizes, strides); `site` is where the body used it.
ConstantStep hold_constant(const at::Tensor& t, std::string site);

// The step's tensor where it is still what the plan was traced with on `device`, else an undefined tensor.
at::Tensor constant_tensor(const ConstantStep& step, c10::Device device);

}  // namespace torch_tile
