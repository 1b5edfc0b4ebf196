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
// and one is gone or has another dtype, sizes or strides (the op traces the call again), or is on another device than
// the call's (`elsewhere`: the plan does not serve this call, which runs the op body).
class ConstantChanged : public std::exception {
 public:
  ConstantChanged(const ConstantStep& step, bool elsewhere) : step_(&step), elsewhere_(elsewhere) {}
  const ConstantStep& step() const { return *step_; }
  bool elsewhere() const { return elsewhere_; }
  const char* what() const noexcept override { return "a tensor a plan holds is no longer the one it traced"; }

 private:
  const ConstantStep* step_;
  bool elsewhere_;
};

// A ConstantStep holding `t` as the plan's trace saw it (dtype, sizes, strides); `site` is where the body used it.
ConstantStep hold_constant(const at::Tensor& t, std::string site);

// The step's tensor where it is still what the plan was traced with (dtype, sizes, strides), else an undefined
// tensor.
at::Tensor constant_tensor(const ConstantStep& step);

}  // namespace torch_tile
