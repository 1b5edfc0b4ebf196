#include "aten_step.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ScalarOps.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include "runtime/error.h"

namespace torch_tile {
namespace {

const c10::OperatorHandle& handle_of(const AtenStep& step) {
  if (!step.resolved) fail(ErrorKind::Runtime, "ATen step " + step.name + " was not resolved");
  return *static_cast<const c10::OperatorHandle*>(step.resolved.get());
}

c10::Scalar scalar_of(const AtenArg& a, const CallArgs& args, const EvalContext& ctx) {
  if (!a.ints.empty()) return c10::Scalar(a.ints[0].evaluate(ctx));
  return c10::Scalar(a.slots.empty() ? a.number : args.floats[a.slots[0]]);
}

c10::IValue value_of(const AtenArg& a, const CallArgs& args, const EvalContext& ctx,
                     const std::function<const at::Tensor&(int)>& tensor_of, c10::Device device) {
  using K = AtenArg::Kind;
  switch (a.kind) {
    case K::None: return c10::IValue();
    case K::Tensor: return tensor_of(a.slots[0]);
    case K::TensorList: {
      c10::List<at::Tensor> list;
      list.reserve(a.slots.size());
      for (int32_t s : a.slots) list.push_back(tensor_of(s));
      return list;
    }
    case K::OptionalTensorList: {
      c10::List<std::optional<at::Tensor>> list;
      list.reserve(a.slots.size());
      for (int32_t s : a.slots) list.push_back(s < 0 ? std::optional<at::Tensor>() : tensor_of(s));
      return list;
    }
    case K::Int: return a.ints[0].evaluate(ctx);
    case K::IntList: {
      c10::List<int64_t> list;
      list.reserve(a.ints.size());
      for (const Expr& e : a.ints) list.push_back(e.evaluate(ctx));
      return list;
    }
    case K::BoolList: {
      c10::List<bool> list;
      list.reserve(a.ints.size());
      for (const Expr& e : a.ints) list.push_back(e.evaluate(ctx) != 0);
      return list;
    }
    case K::Float: return a.slots.empty() ? a.number : args.floats[a.slots[0]];
    case K::Bool: return a.number != 0.0;
    case K::String: return a.text;
    case K::Device: return a.text == "cpu" ? c10::Device(c10::kCPU) : device;
    case K::Scalar: return scalar_of(a, args, ctx);
    case K::WrappedScalar: {
      // What the Python binding makes of `x * 2`: a CPU 0-dim "wrapped number".
      at::Tensor t = c10::scalar_to_tensor(scalar_of(a, args, ctx));
      t.unsafeGetTensorImpl()->set_wrapped_number(true);
      return t;
    }
  }
  fail(ErrorKind::Runtime, "ATen step argument of unknown kind");
}

}  // namespace

void resolve_aten_steps(const std::string& op, LaunchPlan& plan) {
  for (AtenStep& step : plan.aten_steps) {
    const std::optional<c10::OperatorHandle> handle =
        c10::Dispatcher::singleton().findOp(c10::OperatorName(step.name, step.overload));
    if (!handle || !handle->hasSchema()) {
      fail(ErrorKind::Value, op + ": the plan calls " + step.name + (step.overload.empty() ? "" : "." + step.overload) +
                                 " (at " + step.site + "), which this process's torch does not have");
    }
    const size_t n = handle->schema().arguments().size();
    if (n != step.args.size()) {
      fail(ErrorKind::Value, op + ": the plan calls " + step.name + " with " + std::to_string(step.args.size()) +
                                 " arguments; this torch's schema has " + std::to_string(n));
    }
    step.resolved = std::make_shared<const c10::OperatorHandle>(*handle);
  }
}

void run_aten_step(const AtenStep& step, const CallArgs& args,
                   const std::function<const at::Tensor&(int)>& tensor_of, c10::Device device,
                   c10::SmallVector<at::Tensor, 2>& results) {
  const c10::OperatorHandle& handle = handle_of(step);
  const EvalContext ctx = args.eval();
  torch::jit::Stack stack;
  stack.reserve(step.args.size());
  for (const AtenArg& a : step.args) stack.push_back(value_of(a, args, ctx, tensor_of, device));
  {
    // The op's own intermediates: no autograd bookkeeping (the tile op's
    // autograd is its own, one level up).
    c10::impl::ExcludeDispatchKeyGuard below_autograd(c10::autograd_dispatch_keyset_with_ADInplaceOrView);
    try {
      handle.callBoxed(stack);
    } catch (c10::Error& e) {  // its type kept (an out-of-memory error stays one); the op adds its name
      e.add_context("in " + step.name + " (at " + step.site + ")");
      throw;
    }
  }
  // The tensors among the returns, in order, as the trace recorded them (Python's tree leaves): an undefined
  // tensor (convolution_backward's masked gradients) is None there, a Tensor[] or Tensor?[] return its items.
  // A step that writes its arguments keeps none of what it returns (the written arguments themselves).
  results.clear();
  if (step.num_outputs == 0) return;
  const auto take = [&](at::Tensor t) {
    if (t.defined()) results.push_back(std::move(t));
  };
  for (c10::IValue& v : stack) {
    if (v.isTensor()) {
      take(std::move(v).toTensor());
    } else if (v.isList()) {  // Tensor[] or Tensor?[]
      for (const c10::IValue& item : v.toListRef()) {
        if (item.isTensor()) take(item.toTensor());
      }
    }
  }
  if (results.size() != size_t(step.num_outputs)) {
    fail(ErrorKind::Runtime, step.name + " (at " + step.site + ") returned " + std::to_string(results.size()) +
                                 " tensor(s); its plan expects " + std::to_string(step.num_outputs));
  }
}

}  // namespace torch_tile
