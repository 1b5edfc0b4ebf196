#include "benchmarks.h"

#include <pybind11/stl.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/jit/python/pybind_utils.h>

#include <chrono>
#include <optional>

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

template <class Fn>
double ns_per_iteration(int64_t iters, Fn fn) {
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iters; ++i) fn();
  const auto stop = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(stop - start).count() / double(iters);
}

// Nanoseconds per call of each piece of the launch path, timed in isolation,
// for the op's first plan and launch with these arguments.
py::dict bench_breakdown(const std::string& qualname, const py::tuple& args, int64_t iters) {
  const std::shared_ptr<TileOp> tile_op = find_tile_op(qualname);
  if (!tile_op) throw py::value_error("no tile op named " + qualname);
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(qualname.c_str(), "");
  torch::jit::Stack stack = stack_for(op, args);
  torch::jit::Stack inputs = stack_for(op, args);
  py::dict out;
  py::gil_scoped_release no_gil;
  tile_op->call(stack);  // warm; `stack` now holds the outputs
  CallArgs call;
  tile_op->read_arguments(inputs.data(), call);
  const LaunchPlan* plan = tile_op->plans().select(call);
  if (plan == nullptr || plan->launches.empty()) throw py::value_error("no plan with a launch");
  const c10::impl::DeviceGuardImplInterface* cuda = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  const c10::Device device(c10::DeviceType::CUDA, c10::DeviceIndex(call.device));
  double t_args = ns_per_iteration(iters, [&] { tile_op->read_arguments(inputs.data(), call); });
  double t_select = ns_per_iteration(iters, [&] { plan = tile_op->plans().select(call); });
  double t_device = ns_per_iteration(iters, [&] { (void)cuda->getDevice(); });
  double t_stream = ns_per_iteration(iters, [&] { (void)cuda->getStreamNativeHandle(cuda->getStream(device)); });
  double t_context = ns_per_iteration(iters, [&] { ensure_context(call.device); });
  // Outputs of the warm call fill the output slots so the launch can be keyed.
  for (size_t i = 0; i < plan->allocs.size(); ++i) {
    const at::Tensor& t = stack[i].toTensor();
    call.slots[call.num_args + int(i)] = view_of(t, dl_dtype_of(t));
  }
  call.num_slots = call.num_args + int(plan->allocs.size());
  const LaunchStep& step = plan->launches[0];
  SpecializationKey key;
  double t_key = ns_per_iteration(iters, [&] {
    compute_key(step, call, key);
    (void)step.inline_cache->lookup(key);
  });
  {
    py::gil_scoped_acquire gil;
    out["read_arguments"] = t_args;
    out["select_plan"] = t_select;
    out["current_device"] = t_device;
    out["current_stream"] = t_stream;
    out["ensure_context"] = t_context;
    out["key_and_inline_cache"] = t_key;
  }
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
  m.def("bench_breakdown", translating(bench_breakdown), py::arg("qualname"), py::arg("args"), py::arg("iters"),
        "Nanoseconds per call of pieces of the launch path (arguments, plan, device, stream, context, key).");
  m.def("bench_output_allocation", translating(bench_output_allocation), py::arg("like"), py::arg("iters"),
        "Seconds for `iters` allocations and frees of an output like `like` (CUDA caching allocator).");
}

}  // namespace torch_tile
