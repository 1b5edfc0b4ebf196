// A tile op registered with the dispatcher: its schema-derived argument
// layout, its launch plans, and the boxed CUDA kernel that runs them.
#pragma once

#include <ATen/core/stack.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/kernels/kernel_cache.h"
#include "runtime/plan/launch_plan.h"
#include "runtime/launch/plan_executor.h"
#include "runtime/plan/plan_serialization.h"
#include "runtime/plan/plan_set.h"

namespace torch_tile {

class NativeOp;

// Called (rarely) when no plan matches a call: traces the op body for these
// arguments (`args`, read from `stack` at `first_arg`). The Python layer's
// takes the GIL and traces; a bundle's explains the miss. Where the body does
// what no plan holds, a tracer may return a fallback plan if `may_fall_back`
// (a dry run may not: it wants a native plan, or the reason there is none).
class PlanTracer {
 public:
  virtual ~PlanTracer() = default;
  virtual std::unique_ptr<LaunchPlan> trace(NativeOp& op, const CallArgs& args, const torch::jit::Stack& stack,
                                            size_t first_arg, bool may_fall_back) = 0;
  // Runs the op body itself for a call no plan can serve (a fallback plan's, or one whose data check did not
  // hold; `reason` says which): the `n` arguments on `stack` are replaced by the op's returns. Only tracers that
  // make such plans can run them.
  virtual void run_fallback(NativeOp& op, const std::string& reason, torch::jit::Stack& stack, size_t n);
};

class TorchLaunchHost;

// Sees the plan one call selected and what it made: for a caller that needs
// more than the outputs (the Autograd kernel keeps what the backward needs).
class PlanCallHook {
 public:
  virtual ~PlanCallHook() = default;
  // Whether the call runs `plan` (false: NativeOp::call returns false and leaves the stack as it was).
  virtual bool selected(const LaunchPlan& plan) = 0;
  // After the plan ran, before its outputs leave the host.
  virtual void ran(const LaunchPlan& plan, const CallArgs& args, TorchLaunchHost& host) = 0;
};

class NativeOp {
 public:
  // The op's schema must already be defined (its names and alias annotations
  // are read); `schema` is its text, "(Tensor x, ...) -> Tensor". A
  // `gradient_op` (the backward of a differentiable op) may return None
  // (output slot -1) and its own arguments, as autograd's gradients may.
  NativeOp(std::string qualname, std::string schema, std::vector<ArgKind> arg_kinds, int num_returns,
           std::shared_ptr<PlanTracer> tracer, bool gradient_op = false);

  const std::string& qualname() const { return qualname_; }
  const std::vector<ArgKind>& arg_kinds() const { return arg_kinds_; }
  // The schema's argument names, and the indices of the arguments it marks as written.
  const std::vector<std::string>& arg_names() const { return arg_names_; }
  const std::vector<int>& written_args() const { return written_args_; }
  int num_returns() const { return num_returns_; }
  // Whether the op is a gradient op (its outputs may be None and its own arguments).
  bool gradient_op() const { return gradient_op_; }
  // Whether the schema returns one Tensor[] (its plans return any number of tensors, as a list).
  bool returns_list() const { return returns_list_; }
  const std::string& schema() const { return schema_; }
  PlanSet& plans() { return plans_; }

  // What a body run in Python returned (`outputs`, checked against the schema's returns), as the native path
  // returns it: each output that is an argument's memory (the argument, a view of it) or an earlier output's is
  // copied, of its layout, unless the schema declares that return the argument itself. `in`: the op's arguments.
  void own_outputs(std::vector<at::Tensor>& outputs, const c10::IValue* in) const;

  // The op's signature and a copy of every plan traced so far (to serialize).
  OpPlans export_plans() const;
  // Adds plans read back from bytes; refuses plans of another op or signature.
  // Returns how many were added.
  int install_plans(const OpPlans& plans);

  // The boxed CUDA implementation: reads arguments from the stack, selects or
  // traces a plan, runs it on the current stream, pushes the outputs. With a
  // `hook`, returns false if the hook declines the selected plan.
  bool call(torch::jit::Stack& stack, PlanCallHook* hook = nullptr);

  // The Meta implementation (fake tensors, torch.compile) of an op with no
  // Python fake: the plan is selected (or traced) for the arguments' sizes and
  // run as a dry run, so its outputs are meta tensors of the shapes a CUDA
  // call returns. Symbolic sizes and ints are specialised (guard_int), as the
  // plans read concrete values.
  void call_meta(torch::jit::Stack& stack);

  // The compiled variants a call with these arguments needs, without a GPU:
  // the plan is selected (or traced) and run as a dry run on the arguments'
  // device (CPU tensors stand for CUDA ones: their layouts and alignment
  // decide the keys). Returns (kernel, key words) per launch; the stack keeps
  // its arguments.
  std::vector<std::pair<std::shared_ptr<KernelCache>, std::vector<uint64_t>>> variant_keys(
      const torch::jit::Stack& stack);

 private:
  // Reads the op's arguments (`in`, on the stack) into `args` and checks devices and dtypes.
  // `any_device`: tensors on one device of any type (a dry run), not only CUDA.
  // Returns the device the tensors share.
  c10::Device read_arguments(const c10::IValue* in, CallArgs& args, bool any_device = false) const;
  // One tensor of argument `i` (`index`: its item in a Tensor[], or -1), checked like every tensor argument.
  // `first`: the argument and device of the first tensor read (argument -1: none yet).
  struct FirstTensor {
    int arg = -1;
    c10::Device device{c10::DeviceType::CPU};
  };
  TensorArg read_tensor(const at::Tensor& t, size_t i, int64_t index, CallArgs& args, FirstTensor& first,
                        bool any_device) const;
  const LaunchPlan& plan_for(const CallArgs& args, const torch::jit::Stack& stack, size_t first,
                             bool may_fall_back = true);
  // plan_for(), with the tensors the plan holds taken by `host` (TorchLaunchHost::take_constants). Where one is
  // no longer what the plan traced, the op forgets its plans and traces the call again; ConstantChanged where the
  // new plan's tensor changed again, or where one is on another device than the call's.
  const LaunchPlan& plan_holding(const CallArgs& args, const torch::jit::Stack& stack, size_t first,
                                 TorchLaunchHost& host, bool may_fall_back = true);
  // Selects (or traces) the plan for the arguments on `stack` and runs it as a dry run on their device
  // (launch keys to `keys`); `ran(plan, host, device)` sees what it made while the host lives.
  template <class Ran>
  void dry_run(const torch::jit::Stack& stack, KeySink& keys, Ran ran);
  // The plan's outputs replace the `n` arguments on the stack.
  void push_outputs(const LaunchPlan& plan, TorchLaunchHost& host, torch::jit::Stack& stack, size_t n);
  // Refuses a plan that does not fit the op's signature: outputs the schema's
  // returns cannot hold, unguarded list lengths, tensor guards past the inputs.
  void check_signature(const LaunchPlan& plan) const;

  const std::string qualname_;
  const std::vector<ArgKind> arg_kinds_;
  const std::string schema_;  // "(Tensor x, ...) -> Tensor"
  std::vector<std::string> arg_names_;
  std::vector<int> written_args_;
  // Per return: the written argument the schema declares it to be (`(Tensor(a!) x) -> Tensor(a!)`), or -1.
  std::vector<int> returned_args_;
  const int num_returns_;
  bool returns_list_ = false;
  const bool gradient_op_;
  std::shared_ptr<PlanTracer> tracer_;
  PlanSet plans_;
  // Once plans_ is full: the fallback plan of the calls none of its plans serves (made under the trace mutex).
  std::unique_ptr<const LaunchPlan> beyond_full_;
};

// Registers `op` as the implementation of its qualname for `dispatch_key`
// ("CUDA"); the schema must already be defined. Kept for the process lifetime.
void register_native_op(std::shared_ptr<NativeOp> op, const std::string& dispatch_key);

// Defines `qualname` with `signature` ("(Tensor x) -> Tensor") and registers
// the op for an op whose backward this process does not have: its CUDA kernel
// and autograd kernels that refuse calls needing a gradient, saying why
// (`no_backward`: "loaded from a bundle").
std::shared_ptr<NativeOp> define_native_op(const std::string& qualname, const std::string& signature,
                                           std::vector<ArgKind> arg_kinds, int num_returns,
                                           std::shared_ptr<PlanTracer> tracer, const std::string& no_backward);

// Registers `op`'s Meta kernel (NativeOp::call_meta), for ops that have no Python fake.
void register_native_meta(std::shared_ptr<NativeOp> op);

// The registered op of that name, or nullptr.
std::shared_ptr<NativeOp> find_native_op(const std::string& qualname);

}  // namespace torch_tile
