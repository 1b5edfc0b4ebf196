#include "benchmarks.h"

#include <pybind11/stl.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include <c10/core/DeviceGuard.h>

#include <chrono>
#include <optional>
#include <stdexcept>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "../runtime/cuda_driver.h"
#include "../runtime/device_info.h"
#include "../runtime/plan_executor.h"
#include "../torch/dtype_map.h"
#include "../torch/error_translation.h"
#include "../torch/output_allocation.h"
#include "../torch/torch_launch_host.h"
#include "../torch/tile_op.h"

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

// The op's C++ implementation directly, without the dispatcher: what the
// dispatcher itself costs is the difference.
double bench_direct(const std::string& qualname, const py::tuple& args, int64_t iters) {
  const std::shared_ptr<TileOp> tile_op = find_tile_op(qualname);
  if (!tile_op) throw py::value_error("no tile op named " + qualname);
  return seconds_for_calls(qualname, args, iters,
                           [&](const c10::OperatorHandle&, torch::jit::Stack& stack) { tile_op->call(stack); });
}

// Seconds for `iters` bare cuLaunchKernelEx calls replaying the op's last
// launch for these arguments: the floor any launcher pays. With
// `allocate_like`, each iteration also allocates and frees a tensor like it
// (the output an op must return), to show what that costs next to a launch.
double bench_raw_launch(const std::string& qualname, const py::tuple& args, int64_t iters,
                        std::optional<at::Tensor> allocate_like) {
  const std::shared_ptr<TileOp> tile_op = find_tile_op(qualname);
  if (!tile_op) throw py::value_error("no tile op named " + qualname);
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(qualname.c_str(), "");
  torch::jit::Stack stack = stack_for(op, args);
  py::gil_scoped_release no_gil;
  PreparedLaunch launch;
  tile_op->call(stack, &launch);  // outputs stay on `stack`, alive for the loop
  if (launch.function == nullptr) throw py::value_error(qualname + " launched nothing for these arguments");
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
    d.check(d.cuLaunchKernelEx(&launch.config, launch.function, launch.params, nullptr), "cuLaunchKernelEx");
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

// Nanoseconds per call spent in each phase of TileOp::call, stamped inside a
// loop of real calls (so caches and the allocator behave as in bench_direct).
// The phases follow TileOp::call step by step; ticks are converted to ns with
// the loop's wall time.
py::dict bench_phases(const std::string& qualname, const py::tuple& args, int64_t iters) {
  static const char* const kPhases[] = {
      "stack: copy args, free last output", "read_arguments", "device check", "select plan",
      "allocate outputs", "prepare launch (key, variant, params)", "cuLaunchKernelEx", "push outputs"};
  constexpr int kNum = sizeof(kPhases) / sizeof(kPhases[0]);
  const std::shared_ptr<TileOp> tile_op = find_tile_op(qualname);
  if (!tile_op) throw py::value_error("no tile op named " + qualname);
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(qualname.c_str(), "");
  const torch::jit::Stack prototype = stack_for(op, args);
  uint64_t spent[kNum] = {};
  double wall_ns = 0;
  {
    py::gil_scoped_release no_gil;
    torch::jit::Stack stack = prototype;
    tile_op->call(stack);  // warm: traced and compiled
    const size_t n = tile_op->arg_kinds().size();
    const char* name = qualname.c_str();
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iters; ++i) {
      // Phase k runs from t[k] to t[k + 1]; the driver's time is taken out of
      // the launch loop and counted as its own phase.
      uint64_t t[kNum + 1];
      t[0] = ticks();
      stack.assign(prototype.begin(), prototype.end());
      t[1] = ticks();
      CallArgs call;
      tile_op->read_arguments(stack.data(), call);
      t[2] = ticks();
      const c10::Device device(c10::DeviceType::CUDA, c10::DeviceIndex(call.device));
      c10::OptionalDeviceGuard device_guard;
      if (current_context_device() != call.device) device_guard.reset_device(device);
      t[3] = ticks();
      const LaunchPlan* plan = tile_op->plans().select(call);
      if (plan == nullptr) throw std::runtime_error(qualname + ": no plan for the warmed arguments");
      t[4] = ticks();
      TorchLaunchHost host(call, stack.data(), device);
      allocate_outputs(*plan, call, host, name);
      t[5] = ticks();
      uint64_t in_driver = 0;
      ensure_context(call.device);
      for (const LaunchStep& step : plan->launches) {
        PreparedLaunch launch;
        if (!prepare_launch(step, call, host, tile_op->compiler(), name, launch)) continue;
        const uint64_t before = ticks();
        submit_launch(launch, step, name);
        in_driver += ticks() - before;
      }
      t[7] = ticks();
      t[6] = t[7] - in_driver;
      torch::jit::drop(stack, n);
      for (int32_t slot : plan->outputs) torch::jit::push(stack, std::move(host.output(slot)));
      t[8] = ticks();
      for (int k = 0; k < kNum; ++k) spent[k] += t[k + 1] - t[k];
    }
    wall_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  }
  uint64_t total = 0;
  for (uint64_t v : spent) total += v;
  py::dict out;
  for (int k = 0; k < kNum; ++k) out[kPhases[k]] = wall_ns * double(spent[k]) / double(total) / double(iters);
  out["total"] = wall_ns / double(iters);
  return out;
}

// Runtime errors reach Python as the matching torch errors.
template <class R, class... Args>
auto translating(R (*fn)(Args...)) {
  return [fn](Args... args) -> R {
    try {
      return fn(args...);
    } catch (const Error& e) {
      rethrow_as_torch_error(e);
    }
  };
}

}  // namespace

void bind_benchmarks(py::module_& m) {
  m.def("bench_dispatcher", translating(bench_dispatcher), py::arg("qualname"), py::arg("args"), py::arg("iters"),
        "Seconds for `iters` calls of the op from C++ through c10::Dispatcher (GIL released).");
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
