#include "python_hooks.h"

#include <torch/csrc/jit/python/pybind_utils.h>

#include "runtime/counters.h"
#include "runtime/error.h"
#include "../torch/caller_keys.h"
#include "binary_from_python.h"
#include "body_result.h"
#include "interpreter_exit.h"

namespace py = pybind11;

namespace torch_tile {
namespace {

// Python objects may be released from threads that do not hold the GIL.
void release_with_gil(py::object& obj) {
  if (!obj || !Py_IsInitialized() || python_finalizing()) {
    obj.release();  // interpreter ending or gone: leak rather than touch it
    return;
  }
  GilAcquire gil;
  obj = py::object();
}

// Interrupts (KeyboardInterrupt, SystemExit: BaseExceptions that are no Exception) stay what they are on every
// path, never an error of the call.
bool is_interrupt(const py::error_already_set& e) { return !e.matches(PyExc_Exception); }

// The `n` values from `first` on `stack`, as Python objects (GIL held).
py::tuple python_arguments(const torch::jit::Stack& stack, size_t first, size_t n) {
  py::tuple args(n);
  for (size_t i = 0; i < n; ++i) args[i] = torch::jit::toPyObject(stack[first + i]);
  return args;
}

}  // namespace

PythonPlanTracer::~PythonPlanTracer() {
  release_with_gil(trace_fn_);
  release_with_gil(fallback_fn_);
}
PythonCompiler::~PythonCompiler() { release_with_gil(compile_fn_); }
PythonDifferentiableCall::~PythonDifferentiableCall() { release_with_gil(apply_fn_); }
PythonEagerGradient::~PythonEagerGradient() { release_with_gil(body_); }

std::unique_ptr<LaunchPlan> PythonPlanTracer::trace(NativeOp& op, const CallArgs&, const torch::jit::Stack& stack,
                                                    size_t first, bool may_fall_back) {
  GilAcquire gil;
  counters().host_entries.fetch_add(1, std::memory_order_relaxed);
  const py::tuple args = python_arguments(stack, first, op.arg_kinds().size());
  const py::object plan = call_python(trace_fn_, py::make_tuple(args, may_fall_back));
  if (!py::isinstance<LaunchPlan>(plan)) {
    fail(ErrorKind::Runtime, op.qualname() + ": the tracer returned " + std::string(py::str(py::type::of(plan))) +
                                 ", not a LaunchPlan");
  }
  return std::make_unique<LaunchPlan>(plan.cast<const LaunchPlan&>());
}

KernelBinary PythonCompiler::compile(const KernelCache& kernel, const SpecializationKey& key, int capability) {
  GilAcquire gil;
  counters().host_entries.fetch_add(1, std::memory_order_relaxed);
  py::list words(key.size);
  for (uint32_t i = 0; i < key.size; ++i) words[i] = py::int_(key.words[i]);
  try {
    const py::dict result = call_python(compile_fn_, py::make_tuple(kernel.id(), words, capability));
    return binary_from_python(result);
  } catch (py::error_already_set& e) {
    if (is_interrupt(e)) throw;
    // Keep the frontend's message and the kind of error; the launch path adds op, kernel and site.
    const ErrorKind kind = e.matches(PyExc_ValueError)            ? ErrorKind::Value
                           : e.matches(PyExc_TypeError)           ? ErrorKind::Type
                           : e.matches(PyExc_NotImplementedError) ? ErrorKind::NotImplemented
                                                                  : ErrorKind::Runtime;
    const std::string message = std::string(py::str(e.type().attr("__name__"))) + ": " +
                                std::string(py::str(e.value()));
    fail(kind, "compiling " + kernel.name() + " failed: " + message);
  }
}

void PythonPlanTracer::run_fallback(NativeOp& op, const std::string& reason, torch::jit::Stack& stack, size_t n) {
  const AsTheCaller as_the_caller;  // the body runs as outside torch_tile: with autograd
  GilAcquire gil;
  counters().host_entries.fetch_add(1, std::memory_order_relaxed);
  const size_t first = stack.size() - n;
  std::vector<at::Tensor> outputs;
  {
    const py::object result = call_python(fallback_fn_, py::make_tuple(python_arguments(stack, first, n), reason));
    outputs = body_outputs(op, result, stack.data() + first);
  }
  torch::jit::drop(stack, n);
  if (op.returns_list()) {
    torch::jit::push(stack, c10::List<at::Tensor>(std::move(outputs)));
  } else {
    for (at::Tensor& t : outputs) torch::jit::push(stack, std::move(t));
  }
}

void PythonDifferentiableCall::call(const c10::OperatorHandle& op, torch::jit::Stack& stack) {
  const size_t n = op.schema().arguments().size();
  GilAcquire gil;
  counters().host_entries.fetch_add(1, std::memory_order_relaxed);
  const py::object result = call_python(apply_fn_, python_arguments(stack, stack.size() - n, n));
  torch::jit::drop(stack, n);
  const auto& returns = op.schema().returns();  // read as the schema's returns
  if (returns.size() == 1) {
    torch::jit::push(stack, torch::jit::toIValue(result, returns[0].type()));
  } else if (!returns.empty()) {
    const py::tuple values = py::cast<py::tuple>(result);
    for (size_t i = 0; i < returns.size(); ++i) torch::jit::push(stack, torch::jit::toIValue(values[i], returns[i].type()));
  }
}

std::vector<at::Tensor> PythonEagerGradient::run(const c10::OperatorHandle& op, torch::jit::Stack& stack) {
  const size_t n = op.schema().arguments().size();
  GilAcquire gil;
  counters().host_entries.fetch_add(1, std::memory_order_relaxed);
  const py::tuple args = python_arguments(stack, stack.size() - n, n);
  torch::jit::drop(stack, n);
  const py::tuple result = py::cast<py::tuple>(call_python(body_, args));
  std::vector<at::Tensor> grads;
  for (const py::handle g : result) grads.push_back(g.is_none() ? at::Tensor() : py::cast<at::Tensor>(g));
  return grads;
}

}  // namespace torch_tile
