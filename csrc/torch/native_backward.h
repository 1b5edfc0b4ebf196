// Native autograd for tile ops with a registered backward. A call that needs a
// gradient runs its plan in C++ and gets a C++ autograd node that keeps what
// the plan's BackwardSpec names (traced from the op's setup_context). The
// node's backward calls the op's *gradient op*, a tile op whose body is the
// registered backward, so it too is a plan run in C++. Python runs only on
// misses, under create_graph (the backward then runs eagerly, so that it is
// itself differentiated), and for backwards that could not be traced.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/plan/launch_plan.h"
#include "native_op.h"

namespace torch_tile {

// A gradient op's body run eagerly on the stack's arguments (the host
// language's backward, with autograd recording what it does). Returns one
// gradient per argument of the forward op, undefined for None.
class EagerGradient {
 public:
  virtual ~EagerGradient() = default;
  virtual std::vector<at::Tensor> run(const c10::OperatorHandle& op, torch::jit::Stack& stack) = 0;
};

// Declares a defined tile op a gradient op; `eager` runs its body.
void register_gradient_op(const std::string& qualname, std::shared_ptr<EagerGradient> eager);

// Its backward could not be traced (`reason`): every later call runs eagerly (warned once).
void run_gradient_op_eagerly(const std::string& qualname, const std::string& reason);

// Resolves the gradient op a plan's BackwardSpec names, when the plan is installed.
void resolve_backward(const std::string& op, LaunchPlan& plan);

// Runs `op` for a call that needs a gradient and attaches a native autograd
// node to its outputs. Returns false, the stack as it was, when the call's plan
// differentiates in Python (no backward spec, or one that says why not: warned once per op).
bool call_with_native_backward(NativeOp& op, torch::jit::Stack& stack);

}  // namespace torch_tile
