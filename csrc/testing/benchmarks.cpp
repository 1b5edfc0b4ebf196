#include "benchmarks.h"

#include <pybind11/stl.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "runtime/cuda/cuda_driver.h"
#include "runtime/launch/launch_observer.h"
#include "runtime/launch/plan_executor.h"
#include "../torch/dtype_map.h"
#include "../torch/error_translation.h"
#include "../torch/output_allocation.h"
#include "../torch/torch_launch_host.h"
#include "../python/op_named.h"

namespace py = pybind11;

namespace torch_tile {
namespace {

torch::jit::Stack stack_for(const c10::OperatorHandle& op, const py::tuple& args) {
  return torch::jit::createStackForSchema(op.schema(), args, py::kwargs(), std::nullopt);
}

// Seconds for `iters` calls of `call` on a fresh copy of the op's argument
// stack each time (GIL released), as a C++ caller makes them.
template <class Call>
double seconds_for_calls(const std::string& qualname, const py::tuple& args, int64_t iters, Call call) {
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(qualname.c_str(), "");
  const torch::jit::Stack prototype = stack_for(op, args);
  py::gil_scoped_release no_gil;
  torch::jit::Stack stack;
  stack.reserve(prototype.size() + 4);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    stack.assign(prototype.begin(), prototype.end());
    call(op, stack);
  }
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(stop - start).count();
}

// Through c10::Dispatcher, as a LibTorch caller.
double bench_dispatcher(const std::string& qualname, const py::tuple& args, int64_t iters) {
  return seconds_for_calls(qualname, args, iters,
                           [](const c10::OperatorHandle& op, torch::jit::Stack& stack) { op.callBoxed(stack); });
}

// One step of bench_dispatcher_chain: an operator overload, its argument
// stack, and where in that stack the previous step's output goes.
struct ChainStep {
  c10::OperatorHandle op;
  torch::jit::Stack prototype;
  std::vector<size_t> from_previous;  // stack slots filled with the previous step's output
  size_t outputs = 0;                 // values it returned in the untimed run
  bool feeds_next = false;            // the next step takes its output
};

using ChainSpec = std::tuple<std::string, std::string, py::tuple, py::dict>;

bool is_previous_output(py::handle arg) { return arg.ptr() == Py_Ellipsis; }

// Seconds for `iters` runs of a sequence of dispatcher calls, a later call
// taking an earlier one's output, as a C++ caller chains ops (GIL released):
// what a tile op's ATen step would cost if the caller made that call itself.
// Each step is (qualname, overload, args, kwargs); an argument that is `...`
// (Ellipsis) stands for the previous step's output. Ellipsis because no
// schema type accepts it, so it cannot collide with a real argument. The
// chain runs once first, untimed: it warms the ops, and its outputs stand in
// for `...` while the stacks are built (the schema checks their types).
double bench_dispatcher_chain(const std::vector<ChainSpec>& specs, int64_t iters) {
  if (specs.empty()) throw py::value_error("bench_dispatcher_chain: no steps");
  std::vector<ChainStep> steps;
  steps.reserve(specs.size());
  c10::IValue previous;
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& [qualname, overload, args, kwargs] = specs[i];
    const std::string where = "bench_dispatcher_chain: step " + std::to_string(i) + " (" + qualname +
                              (overload.empty() ? "" : "." + overload) + ")";
    std::optional<c10::OperatorHandle> op = c10::Dispatcher::singleton().findSchema({qualname, overload});
    if (!op) throw py::value_error(where + ": no such operator overload");
    // `...` is replaced by the previous output here (to build and check the
    // stack) and again on every timed call; only top-level arguments may be `...`.
    auto take_previous = [&](py::handle arg) -> py::object {
      if (!is_previous_output(arg)) return py::reinterpret_borrow<py::object>(arg);
      if (i == 0) throw py::value_error(where + ": `...` (the previous output) in the first step");
      if (steps.back().outputs != 1) {
        throw py::value_error(where + ": `...` but the previous step returned " +
                              std::to_string(steps.back().outputs) + " values, not one");
      }
      return torch::jit::toPyObject(previous);
    };
    std::vector<size_t> from_previous;
    py::tuple call_args(args.size());
    for (size_t k = 0; k < args.size(); ++k) {
      if (is_previous_output(args[k])) from_previous.push_back(k);  // positional k is stack slot k
      call_args[k] = take_previous(args[k]);
    }
    py::kwargs call_kwargs;
    for (auto [name, value] : kwargs) call_kwargs[name] = take_previous(value);
    ChainStep step{*op, {}, {}, 0, false};
    try {
      step.prototype = torch::jit::createStackForSchema(op->schema(), call_args, call_kwargs, std::nullopt);
    } catch (const std::exception& e) {
      throw py::type_error(where + ": " + e.what());
    }
    for (auto [name, value] : kwargs) {  // the schema accepted the names, so each has a slot
      if (is_previous_output(value)) {
        from_previous.push_back(size_t(*op->schema().argumentIndexWithName(py::cast<std::string>(name))));
      }
    }
    for (size_t slot : from_previous) step.prototype[slot] = c10::IValue();  // the live output goes there
    step.from_previous = std::move(from_previous);
    torch::jit::Stack stack = step.prototype;
    for (size_t slot : step.from_previous) stack[slot] = previous;
    {
      py::gil_scoped_release no_gil;
      op->callBoxed(stack);
    }
    step.outputs = stack.size();
    previous = step.outputs == 1 ? std::move(stack[0]) : c10::IValue();
    if (!step.from_previous.empty()) steps.back().feeds_next = true;
    steps.push_back(std::move(step));
  }
  previous = c10::IValue();
  py::gil_scoped_release no_gil;
  torch::jit::Stack stack;
  const auto start = std::chrono::steady_clock::now();
  for (int64_t it = 0; it < iters; ++it) {
    for (const ChainStep& step : steps) {
      stack.assign(step.prototype.begin(), step.prototype.end());
      for (size_t slot : step.from_previous) stack[slot] = previous;
      step.op.callBoxed(stack);
      if (step.feeds_next) previous = std::move(stack[0]);
    }
  }
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(stop - start).count();
}

// The op's C++ implementation directly, without the dispatcher: what the
// dispatcher itself costs is the difference.
double bench_direct(const std::string& qualname, const py::tuple& args, int64_t iters) {
  const std::shared_ptr<NativeOp> native_op = op_named(qualname);
  return seconds_for_calls(qualname, args, iters,
                           [&](const c10::OperatorHandle&, torch::jit::Stack& stack) { native_op->call(stack); });
}

// Keeps a copy of the last launch of the calls it observes.
class LastLaunch final : public LaunchObserver {
 public:
  void phase(CallPhase) override {}
  void launched(const PreparedLaunch& launch) override {
    last = launch;
    last.bind();
    seen = true;
  }
  PreparedLaunch last;
  bool seen = false;
};

// Seconds for `iters` bare cuLaunchKernelEx calls replaying the op's last
// launch for these arguments: the floor any launcher pays. With
// `allocate_like`, each iteration also allocates and frees a tensor like it
// (the output an op must return), to show what that costs next to a launch.
double bench_raw_launch(const std::string& qualname, const py::tuple& args, int64_t iters,
                        std::optional<at::Tensor> allocate_like) {
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(qualname.c_str(), "");
  torch::jit::Stack stack = stack_for(op, args);
  py::gil_scoped_release no_gil;
  LastLaunch observed;
  {
    ScopedLaunchObserver scope(&observed);
    op.callBoxed(stack);  // outputs stay on `stack`, alive for the loop
  }
  if (!observed.seen) throw py::value_error(qualname + " launched nothing for these arguments");
  const PreparedLaunch& launch = observed.last;
  const CudaDriver& d = cuda_driver();
  AllocStep like_step;
  like_step.kind = AllocStep::Kind::EmptyLike;
  if (allocate_like) like_step.dtype = pack_dtype(dl_dtype_of(*allocate_like));
  c10::Allocator* allocator = c10::GetAllocator(c10::DeviceType::CUDA);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    if (allocate_like) {
      at::Tensor t = allocate_output(like_step, nullptr, 0, &*allocate_like, allocator,
                                     c10::DispatchKeySet(c10::DispatchKey::CUDA));
    }
    d.check(d.cuLaunchKernelEx(&launch.config, launch.function, const_cast<void**>(launch.params), nullptr),
            "cuLaunchKernelEx");
  }
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(stop - start).count();
}

// Seconds for `iters` allocations and frees of a tensor like `like` (CUDA
// caching allocator, the op's own output path): part of every op's cost.
double bench_output_allocation(const at::Tensor& like, int64_t iters) {
  py::gil_scoped_release no_gil;
  AllocStep step;
  step.kind = AllocStep::Kind::EmptyLike;
  step.dtype = pack_dtype(dl_dtype_of(like));
  c10::Allocator* allocator = c10::GetAllocator(c10::DeviceType::CUDA);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    at::Tensor t = allocate_output(step, nullptr, 0, &like, allocator, c10::DispatchKeySet(c10::DispatchKey::CUDA));
  }
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(stop - start).count();
}

// A cycle counter cheap enough to stamp every phase of every call: rdtsc on
// x86 (a VM's clock_gettime may be a syscall), else the steady clock.
uint64_t ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

// Stamps each phase boundary of the calls it observes and adds the time
// since the previous stamp to the phase that just ended.
class PhaseTimer final : public LaunchObserver {
 public:
  static constexpr int kPhases = int(CallPhase::Count_);
  void start() { last_ = ticks(); }
  void phase(CallPhase p) override {
    const uint64_t now = ticks();
    spent[int(p)] += now - last_;
    last_ = now;
  }
  uint64_t spent[kPhases] = {};

 private:
  uint64_t last_ = 0;
};

// Nanoseconds per call spent in each phase of the op's native implementation,
// stamped by a LaunchObserver inside a loop of real calls (so caches and the
// allocator behave as in bench_direct); ticks are converted to ns with the
// loop's wall time. "stack" is the caller's copy of the arguments (and the
// free of the previous call's outputs); the rest follow CallPhase.
py::dict bench_phases(const std::string& qualname, const py::tuple& args, int64_t iters) {
  static const char* const kNames[] = {"read_arguments", "device check", "select plan", "allocate outputs",
                                       "prepare launch (key, variant, params)", "cuLaunchKernelEx",
                                       "push outputs"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == PhaseTimer::kPhases, "one name per CallPhase");
  const std::shared_ptr<NativeOp> native_op = op_named(qualname);
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(qualname.c_str(), "");
  const torch::jit::Stack prototype = stack_for(op, args);
  PhaseTimer timer;
  uint64_t stack_ticks = 0;
  double wall_ns = 0;
  {
    py::gil_scoped_release no_gil;
    torch::jit::Stack stack = prototype;
    native_op->call(stack);  // warm: traced and compiled
    ScopedLaunchObserver scope(&timer);
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iters; ++i) {
      const uint64_t before = ticks();
      stack.assign(prototype.begin(), prototype.end());
      timer.start();
      stack_ticks += ticks() - before;
      native_op->call(stack);
    }
    wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  }
  uint64_t total = stack_ticks;
  for (uint64_t v : timer.spent) total += v;
  const double ns_per_tick = wall_ns / double(total);
  py::dict out;
  out["stack: copy args, free last output"] = ns_per_tick * double(stack_ticks) / double(iters);
  for (int k = 0; k < PhaseTimer::kPhases; ++k) out[kNames[k]] = ns_per_tick * double(timer.spent[k]) / double(iters);
  out["total"] = wall_ns / double(iters);
  return out;
}

// Runtime errors reach Python as the matching torch errors.
template <class R, class... Args>
auto translating(R (*fn)(Args...)) {
  return [fn](Args... args) -> R { return translating_errors([&] { return fn(args...); }); };
}

}  // namespace

void bind_benchmarks(py::module_& m) {
  m.def("bench_dispatcher", translating(bench_dispatcher), py::arg("qualname"), py::arg("args"), py::arg("iters"),
        "Seconds for `iters` calls of the op from C++ through c10::Dispatcher (GIL released).");
  m.def("bench_dispatcher_chain", translating(bench_dispatcher_chain), py::arg("steps"), py::arg("iters"),
        "Seconds for `iters` runs of a chain of ops from C++ through c10::Dispatcher (GIL released). Each step is "
        "(qualname, overload, args, kwargs), overload '' for the default; an argument `...` is the previous "
        "step's output. The chain runs once, untimed, before the loop.");
  m.def("bench_direct", translating(bench_direct), py::arg("qualname"), py::arg("args"), py::arg("iters"),
        "Seconds for `iters` calls of the op's C++ implementation without the dispatcher (GIL released).");
  m.def("bench_raw_launch", translating(bench_raw_launch), py::arg("qualname"), py::arg("args"), py::arg("iters"),
        py::arg("allocate_like") = py::none(),
        "Seconds for `iters` bare cuLaunchKernelEx replays of the op's last launch (the driver floor), each "
        "with an allocation + free of a tensor like `allocate_like` when given.");
  m.def("bench_phases", translating(bench_phases), py::arg("qualname"), py::arg("args"), py::arg("iters"),
        "Nanoseconds per call in each phase of the op's C++ implementation, stamped inside a loop of real calls.");
  m.def("bench_output_allocation", translating(bench_output_allocation), py::arg("like"), py::arg("iters"),
        "Seconds for `iters` allocations and frees of an output like `like` (CUDA caching allocator).");
}

}  // namespace torch_tile
