// The runtime's slow-path hooks implemented by calling Python: tracing an op
// body into a plan, compiling a kernel variant with Triton, and running an op
// under its autograd.Function, running a backward eagerly. All take the GIL
// (and park a thread that the exiting interpreter ends: interpreter_exit.h);
// none runs in a steady state.
#pragma once

#include <pybind11/pybind11.h>

#include "../torch/autograd_kernel.h"
#include "../torch/native_backward.h"
#include "../torch/native_op.h"

namespace torch_tile {

// Hidden like pybind11's own types, which these classes hold.
#define TORCH_TILE_PY_HIDDEN __attribute__((visibility("hidden")))

class TORCH_TILE_PY_HIDDEN PythonPlanTracer final : public PlanTracer {
 public:
  PythonPlanTracer(pybind11::object trace_fn, pybind11::object fallback_fn)
      : trace_fn_(std::move(trace_fn)), fallback_fn_(std::move(fallback_fn)) {}
  ~PythonPlanTracer() override;
  std::unique_ptr<LaunchPlan> trace(NativeOp& op, const CallArgs& args, const torch::jit::Stack& stack,
                                    size_t first, bool may_fall_back) override;
  void run_fallback(NativeOp& op, const std::string& reason, torch::jit::Stack& stack, size_t n) override;

 private:
  pybind11::object trace_fn_;     // (args tuple, may_fall_back) -> LaunchPlan
  pybind11::object fallback_fn_;  // (args tuple, reason) -> the op's returns, from the body run in Python
};

class TORCH_TILE_PY_HIDDEN PythonCompiler final : public Compiler {
 public:
  explicit PythonCompiler(pybind11::object compile_fn) : compile_fn_(std::move(compile_fn)) {}
  ~PythonCompiler() override;
  KernelBinary compile(const KernelCache& kernel, const SpecializationKey& key, int capability) override;

 private:
  pybind11::object compile_fn_;  // (kernel_id, key words, capability) -> result dict
};

class TORCH_TILE_PY_HIDDEN PythonDifferentiableCall final : public DifferentiableCall {
 public:
  explicit PythonDifferentiableCall(pybind11::object apply_fn) : apply_fn_(std::move(apply_fn)) {}
  ~PythonDifferentiableCall() override;
  void call(const c10::OperatorHandle& op, torch::jit::Stack& stack) override;

 private:
  pybind11::object apply_fn_;  // autograd.Function.apply: (*args) -> Tensor | tuple | None
};

class TORCH_TILE_PY_HIDDEN PythonEagerGradient final : public EagerGradient {
 public:
  explicit PythonEagerGradient(pybind11::object body) : body_(std::move(body)) {}
  ~PythonEagerGradient() override;
  std::vector<at::Tensor> run(const c10::OperatorHandle& op, torch::jit::Stack& stack) override;

 private:
  pybind11::object body_;  // the gradient op's body: (*args) -> tuple of Tensor | None
};

}  // namespace torch_tile
