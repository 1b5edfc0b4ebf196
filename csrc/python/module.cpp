// torch_tile._C: registers tile ops, frontends and kernels from Python, and
// exposes the runtime's counters; benchmarks and probes are the separate torch_tile._testing.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <vector>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/extension.h>

#include "runtime/counters.h"
#include "runtime/error.h"
#include "../torch/caller_keys.h"
#include "../torch/error_translation.h"
#include "runtime/plan/limits.h"
#include "../torch/native_op.h"
#include "../torch/written_argument_check.h"
#include "runtime/kernels/kernel_registry.h"
#include "runtime/plan/plan_serialization.h"
#include "binary_from_python.h"
#include "body_result.h"
#include "bundle_bindings.h"
#include "fast_caller.h"
#include "interpreter_exit.h"
#include "nvrtc_bindings.h"
#include "op_named.h"
#include "plan_bindings.h"
#include "python_hooks.h"

namespace py = pybind11;
using namespace torch_tile;

namespace {

void register_kernel(int64_t id, const std::string& name, const std::string& frontend) {
  translating_errors([&] { kernel_cache_for(id, name, frontend); });
}

void register_op(const std::string& qualname, const std::string& schema, const std::vector<int>& arg_kinds,
                 int num_returns, py::object trace_fn, py::object fallback_fn, const std::string& dispatch_key,
                 bool gradient_op) {
  std::vector<ArgKind> kinds;
  for (int k : arg_kinds) {
    if (k < 0 || k >= int(ArgKind::Count_)) throw py::value_error("register_op: unknown argument kind " + std::to_string(k));
    kinds.push_back(ArgKind(k));
  }
  translating_errors([&] {
    auto op = std::make_shared<NativeOp>(qualname, schema, std::move(kinds), num_returns,
                                         std::make_shared<PythonPlanTracer>(std::move(trace_fn), std::move(fallback_fn)),
                                         gradient_op);
    register_native_op(std::move(op), dispatch_key);
  });
}

void register_gradient(const std::string& qualname, py::object body) {
  translating_errors([&] { register_gradient_op(qualname, std::make_shared<PythonEagerGradient>(std::move(body))); });
}

void register_autograd(const std::string& qualname, const std::vector<int>& mutated_args, py::object apply_fn) {
  translating_errors([&] {
    register_autograd_kernels(qualname, mutated_args, std::make_shared<PythonDifferentiableCall>(std::move(apply_fn)));
  });
}

void set_backward(const std::string& qualname, py::object apply_fn) {
  translating_errors([&] {
    set_differentiable_call(qualname, std::make_shared<PythonDifferentiableCall>(std::move(apply_fn)));
  });
}

// A Python path's arguments (the CPU interpreter's, the fake's) as the CUDA kernel's checks read them: tensors
// and Tensor[] items (other values are None; arguments left at their defaults may be absent, and are no tensors).
std::vector<c10::IValue> tensor_arguments(const NativeOp& op, const py::tuple& args) {
  std::vector<c10::IValue> values(op.arg_names().size());
  for (size_t i = 0; i < args.size() && i < values.size(); ++i) {
    if (THPVariable_Check(args[i].ptr())) {
      values[i] = THPVariable_Unpack(args[i].ptr());
    } else if (py::isinstance<py::list>(args[i]) || py::isinstance<py::tuple>(args[i])) {  // a list[Tensor]
      c10::List<at::Tensor> items;
      for (py::handle item : args[i]) {
        if (!THPVariable_Check(item.ptr())) break;
        items.push_back(THPVariable_Unpack(item.ptr()));
      }
      values[i] = std::move(items);
    }
  }
  return values;
}

// The Python paths check in-place calls as the CUDA kernel does.
void check_written_python_arguments(const std::string& qualname, const py::tuple& args) {
  const std::shared_ptr<NativeOp> op = op_named(qualname);
  if (op->written_args().empty()) return;
  const std::vector<c10::IValue> values = tensor_arguments(*op, args);
  translating_errors([&] { check_written_arguments(qualname, op->arg_names(), op->written_args(), values.data()); });
}

// A body's result on a Python path, checked and owned as a fallback call's (body_result.h).
py::object checked_result(const std::string& qualname, const py::tuple& args, const py::handle result) {
  const std::shared_ptr<NativeOp> op = op_named(qualname);
  const std::vector<c10::IValue> values = tensor_arguments(*op, args);
  return outputs_to_python(*op, body_outputs(*op, result, values.data()));
}

// `plans`: the op's own (None) or given ones (e.g. traced with TileOp.trace, on any machine).
py::bytes export_plans(const std::string& qualname, std::optional<std::vector<LaunchPlan>> plans) {
  const std::shared_ptr<NativeOp> op = op_named(qualname);
  return translating_errors([&] {
    OpPlans out = op->export_plans();
    if (plans) out.plans = std::move(*plans);
    return py::bytes(serialize_plans(out));
  });
}

OpPlans read_plans(const std::string& bytes) {
  return translating_errors(
      [&] { return deserialize_plans(bytes, [](const KernelRef& ref) { return find_kernel_cache(ref.id); }); });
}

py::dict plans_from_bytes(const py::bytes& data) { return op_plans_to_python(read_plans(std::string(data))); }

int install_plans(const std::string& qualname, const py::bytes& data) {
  const std::shared_ptr<NativeOp> op = op_named(qualname);
  const OpPlans plans = read_plans(std::string(data));
  // The op's trace mutex may be held by a thread that waits for the GIL (a first call tracing).
  GilRelease no_gil;
  return translating_errors([&] { return op->install_plans(plans); });
}

std::vector<LaunchPlan> plans_of(const std::string& qualname) {
  PlanSet& plans = op_named(qualname)->plans();
  std::vector<LaunchPlan> out;
  for (int i = 0; i < plans.size(); ++i) out.push_back(plans.at(i));
  return out;
}

py::dict counter_values() {
  const Counters& c = counters();
  py::dict d;
  d["traces"] = c.traces.load();
  d["compiles"] = c.compiles.load();
  d["host_entries"] = c.host_entries.load();
  d["map_lookups"] = c.map_lookups.load();
  d["plan_scans"] = c.plan_scans.load();
  d["tensor_map_encodes"] = c.tensor_map_encodes.load();
  d["fallback_calls"] = c.fallback_calls.load();
  return d;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "torch_tile native runtime";
  m.def("register_frontend",
        [](const std::string& name, py::object fn) {
          register_frontend(name, std::make_shared<PythonCompiler>(std::move(fn)));
        },
        py::arg("name"), py::arg("compile_fn"),
        "Registers a frontend whose kernels compile with `compile_fn(kernel_id, key_words, capability) -> dict`.");
  m.def("register_kernel", &register_kernel, py::arg("kernel_id"), py::arg("name"), py::arg("frontend"),
        "Creates the native variant cache of a kernel of a registered frontend.");
  m.def("register_op", &register_op, py::arg("qualname"), py::arg("schema"), py::arg("arg_kinds"),
        py::arg("num_returns"),
        py::arg("trace_fn"), py::arg("fallback_fn"), py::arg("dispatch_key") = "CUDA", py::arg("gradient_op") = false,
        "Registers the native implementation of a defined op for a dispatch key: `trace_fn(args, may_fall_back)` "
        "returns the plan for a call no plan serves, `fallback_fn(args, reason)` runs the body for calls a fallback "
        "plan selects (a `gradient_op` may return None and its own arguments).");
  m.def("register_gradient_op", &register_gradient, py::arg("qualname"), py::arg("body"),
        "Declares a registered op the gradient op of differentiable ops; `body(*args)` runs it eagerly.");
  m.def("run_gradient_op_eagerly", [](const std::string& qualname, const std::string& reason) {
        translating_errors([&] { run_gradient_op_eagerly(qualname, reason); });
      }, py::arg("qualname"), py::arg("reason"),
        "Makes every later backward through a gradient op run its body eagerly (warned once with `reason`).");
  m.def("register_autograd", &register_autograd, py::arg("qualname"), py::arg("mutated_args"), py::arg("apply_fn"),
        "Registers the op's Autograd (and, for mutating ops, ADInplaceOrView) kernels; calls that need a gradient "
        "run `apply_fn` (an autograd.Function's apply).");
  m.def("set_backward", &set_backward, py::arg("qualname"), py::arg("apply_fn"),
        "Replaces the autograd.Function that calls needing a gradient run.");
  m.def("plan_count", [](const std::string& qualname) {
        auto op = find_native_op(qualname);
        return op ? op->plans().size() : -1;
      }, "Number of launch plans an op has traced.");
  m.def("plans_of", &plans_of, py::arg("qualname"), "Copies of an op's launch plans, in the order they were added.");
  m.attr("PLAN_FORMAT_VERSION") = kPlanFormatVersion;
  m.def("export_plans", &export_plans, py::arg("qualname"), py::arg("plans") = py::none(),
        "An op's signature and plans (its own, or `plans`) as versioned, checksummed bytes "
        "(docs/ARCHITECTURE.md, \"Serialized plans\").");
  m.def("clear_plans", [](const std::string& qualname) { op_named(qualname)->plans().clear(); }, py::arg("qualname"),
        "Forgets an op's plans: the next call of each case traces again.");
  m.def("plans_from_bytes", &plans_from_bytes, py::arg("data"),
        "Reads serialized plans (ValueError if corrupt, truncated or of another version): a dict with qualname, "
        "schema, arg_kinds, num_returns and plans.");
  m.def("install_plans", &install_plans, py::arg("qualname"), py::arg("data"),
        "Adds serialized plans to the op they were exported from (same name and schema); returns how many.");
  m.def("variant_count", [](int64_t kernel_id) {
        auto k = find_kernel_cache(kernel_id);
        return k ? int64_t(k->size()) : int64_t(-1);
      }, "Number of compiled variants a kernel has.");
  m.def("check_written_arguments", &check_written_python_arguments, py::arg("qualname"), py::arg("args"),
        "Raises ValueError if a tensor the op writes overlaps itself or partially overlaps another argument.");
  m.attr("MAX_SHAPE_RANK") = kMaxShapeRank;
  m.attr("MAX_GRID") = py::make_tuple(kMaxGrid[0], kMaxGrid[1], kMaxGrid[2]);
  m.def("param_type_bytes", &param_type_bytes_by_name,
        "Bytes of each kernel parameter type a compile result may name (\"*\": any pointer).");
  m.def("counters", &counter_values, "Slow-path event counters (traces, compiles, host entries, map lookups).");
  m.def("count_fallback_call", [] { counters().fallback_calls.fetch_add(1, std::memory_order_relaxed); },
        "Counts a call that ran its op body in Python on a path outside the native runtime (the CPU path).");
  m.def("checked_result", &checked_result, py::arg("qualname"), py::arg("args"), py::arg("result"),
        "What the op's body returned for `args` (schema order), as the op returns it: checked against the schema's "
        "returns (OpDefinitionError), each output that is an argument's memory or an earlier output copied.");
  m.def("run_as_the_caller", [](const py::function& body) {
        const AsTheCaller as_the_caller;
        return body();
      }, py::arg("body"),
      "Calls `body()` with the dispatch keys of the tile op's caller (autograd included), as a body run per call "
      "runs outside torch_tile; called from a tile op's kernel below autograd.");
  bind_plan_format(m);
  bind_bundles(m);
  bind_fast_caller(m);
  bind_nvrtc(m);
}
